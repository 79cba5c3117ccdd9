package registration

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// TestGrantNarrow: a join keeps only the labels and location its token allows, and what it loses is said.
func TestGrantNarrow(t *testing.T) {
	asked := func() *clusterv1alpha1.Cluster {
		return &clusterv1alpha1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"env": "prod", "team": "blue"}},
			Spec:       clusterv1alpha1.ClusterSpec{Provider: "aws", Region: "eu-west-1", Zones: []string{"a", "b"}},
		}
	}
	tests := []struct {
		name        string
		grant       Grant
		wantLabels  map[string]string
		wantSpec    clusterv1alpha1.ClusterSpec
		wantDropped string
	}{
		{"token allows nothing", Grant{}, map[string]string{}, clusterv1alpha1.ClusterSpec{},
			"labels env=prod,team=blue; provider aws; region eu-west-1; zones a,b"},
		{"token allows all of it", Grant{Labels: map[string]string{"env": "prod", "team": "blue"}, Provider: "aws", Region: "eu-west-1", Zones: []string{"a", "b", "c"}},
			map[string]string{"env": "prod", "team": "blue"}, clusterv1alpha1.ClusterSpec{Provider: "aws", Region: "eu-west-1", Zones: []string{"a", "b"}}, ""},
		{"token allows another value", Grant{Labels: map[string]string{"env": "dev", "team": "blue"}, Region: "us-east-1", Zones: []string{"b"}},
			map[string]string{"team": "blue"}, clusterv1alpha1.ClusterSpec{Zones: []string{"b"}}, "labels env=prod; provider aws; region eu-west-1; zones a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := asked()
			dropped := tt.grant.narrow(c)
			if dropped != tt.wantDropped {
				t.Errorf("dropped %q, want %q", dropped, tt.wantDropped)
			}
			if !reflect.DeepEqual(c.Labels, tt.wantLabels) || !reflect.DeepEqual(c.Spec, tt.wantSpec) {
				t.Errorf("kept labels %v spec %+v, want %v %+v", c.Labels, c.Spec, tt.wantLabels, tt.wantSpec)
			}
		})
	}
}
