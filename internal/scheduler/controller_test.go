package scheduler

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// TestDecideNeverEmptiesAPlacement: whatever the framework returns, spec.clusters is replaced only by a
// non-empty placement, and otherwise Scheduled=False says why.
func TestDecideNeverEmptiesAPlacement(t *testing.T) {
	placed := []workv1alpha1.TargetCluster{{Name: "a", Replicas: 2}}
	tests := []struct {
		name        string
		current     []workv1alpha1.TargetCluster
		res         Result
		err         error
		wantPlaced  bool
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
	}{
		{"nothing fits", placed, Result{}, errors.New("0/2 clusters fit"), false, metav1.ConditionFalse, ReasonNoClusterFit,
			"0/2 clusters fit; the current placement stays"},
		{"an empty result over a placement", placed, Result{}, nil, false, metav1.ConditionFalse, ReasonEmptyPlacement,
			"the placement chose no cluster; the current placement stays"},
		{"an empty result for a new binding", nil, Result{}, nil, false, metav1.ConditionFalse, ReasonEmptyPlacement,
			"the placement chose no cluster"},
		{"placed", placed, Result{Clusters: []workv1alpha1.TargetCluster{{Name: "b", Replicas: 2}}}, nil, true, metav1.ConditionTrue, ReasonScheduled,
			"placed on b (2)"},
		{"placed with a fallback", nil, Result{Clusters: placed, AffinityName: "primary", Note: "equal weights"}, nil, true, metav1.ConditionTrue, ReasonScheduled,
			"placed on a (2) (affinity group primary); equal weights"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cond, ok := decide(tt.current, tt.res, tt.err)
			if ok != tt.wantPlaced || cond.Status != tt.wantStatus || cond.Reason != tt.wantReason || cond.Message != tt.wantMessage {
				t.Fatalf("got placed=%v %s %s %q, want placed=%v %s %s %q", ok, cond.Status, cond.Reason, cond.Message,
					tt.wantPlaced, tt.wantStatus, tt.wantReason, tt.wantMessage)
			}
		})
	}
}
