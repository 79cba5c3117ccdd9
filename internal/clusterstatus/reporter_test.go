package clusterstatus

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// TestMergedKeepsWhatDiscoveryMissed: an incomplete API list keeps the last known entries of the groups it
// lacks; a complete one replaces the list; the health monitor's Ready condition is kept either way.
func TestMergedKeepsWhatDiscoveryMissed(t *testing.T) {
	gvs := func(names ...string) []clusterv1alpha1.APIEnablement {
		out := make([]clusterv1alpha1.APIEnablement, len(names))
		for i, n := range names {
			out[i] = clusterv1alpha1.APIEnablement{GroupVersion: n}
		}
		return out
	}
	apis := func(s metav1.ConditionStatus) []metav1.Condition {
		return []metav1.Condition{{Type: clusterv1alpha1.ClusterConditionAPIsComplete, Status: s, Reason: "R"}}
	}
	ready := []metav1.Condition{{Type: clusterv1alpha1.ClusterConditionReady, Status: metav1.ConditionTrue, Reason: ReasonReady}}
	tests := []struct {
		name              string
		current, observed clusterv1alpha1.ClusterStatus
		want              string
		wantComplete      metav1.ConditionStatus
	}{
		{"a failed group keeps its last entry",
			clusterv1alpha1.ClusterStatus{Conditions: ready, APIEnablements: gvs("apps/v1", "metrics.k8s.io/v1beta1", "v1")},
			clusterv1alpha1.ClusterStatus{Conditions: apis(metav1.ConditionFalse), APIEnablements: gvs("apps/v1", "v1")},
			"apps/v1,metrics.k8s.io/v1beta1,v1", metav1.ConditionFalse},
		{"nothing discovered keeps the whole list",
			clusterv1alpha1.ClusterStatus{Conditions: ready, APIEnablements: gvs("apps/v1", "v1")},
			clusterv1alpha1.ClusterStatus{Conditions: apis(metav1.ConditionFalse)},
			"apps/v1,v1", metav1.ConditionFalse},
		{"a complete list replaces the last one",
			clusterv1alpha1.ClusterStatus{Conditions: ready, APIEnablements: gvs("apps/v1", "metrics.k8s.io/v1beta1", "v1")},
			clusterv1alpha1.ClusterStatus{Conditions: apis(metav1.ConditionTrue), APIEnablements: gvs("apps/v1", "example.com/v1")},
			"apps/v1,example.com/v1", metav1.ConditionTrue},
		{"first report, incomplete",
			clusterv1alpha1.ClusterStatus{},
			clusterv1alpha1.ClusterStatus{Conditions: apis(metav1.ConditionFalse), APIEnablements: gvs("v1")},
			"v1", metav1.ConditionFalse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := merged(&tt.current, &tt.observed)
			var names []string
			for _, e := range got.APIEnablements {
				names = append(names, e.GroupVersion)
			}
			if strings.Join(names, ",") != tt.want {
				t.Fatalf("apiEnablements %v, want %s", names, tt.want)
			}
			if c := meta.FindStatusCondition(got.Conditions, clusterv1alpha1.ClusterConditionAPIsComplete); c == nil || c.Status != tt.wantComplete {
				t.Fatalf("APIsComplete %+v, want %s", c, tt.wantComplete)
			}
			if len(tt.current.Conditions) > 0 && !meta.IsStatusConditionTrue(got.Conditions, clusterv1alpha1.ClusterConditionReady) {
				t.Fatalf("the Ready condition was lost: %+v", got.Conditions)
			}
		})
	}
}
