package clusterstatus

import (
	"strings"
	"testing"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

func TestWithLastKnownKeepsWhatDiscoveryMissed(t *testing.T) {
	gvs := func(names ...string) []clusterv1alpha1.APIEnablement {
		out := make([]clusterv1alpha1.APIEnablement, len(names))
		for i, n := range names {
			out[i] = clusterv1alpha1.APIEnablement{GroupVersion: n}
		}
		return out
	}
	tests := []struct {
		name             string
		discovered, last []clusterv1alpha1.APIEnablement
		want             string
	}{
		{"a failed group keeps its last entry", gvs("apps/v1", "v1"), gvs("apps/v1", "metrics.k8s.io/v1beta1", "v1"), "apps/v1,metrics.k8s.io/v1beta1,v1"},
		{"nothing discovered keeps the whole list", nil, gvs("apps/v1", "v1"), "apps/v1,v1"},
		{"a new group is added", gvs("apps/v1", "example.com/v1"), gvs("apps/v1"), "apps/v1,example.com/v1"},
		{"never reported", gvs("apps/v1"), nil, "apps/v1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, e := range withLastKnown(tt.discovered, tt.last) {
				got = append(got, e.GroupVersion)
			}
			if strings.Join(got, ",") != tt.want {
				t.Fatalf("got %v, want %s", got, tt.want)
			}
		})
	}
}
