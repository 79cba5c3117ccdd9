package binding

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// TestShardedRender: a binding's Works are divided among the replicas unless something is decided for the
// binding as a whole: override policies in scope (or an Overridden condition from earlier ones), a
// progressive rollout, or a rollout's status left from one.
func TestShardedRender(t *testing.T) {
	plain := func() *workv1alpha1.ResourceBinding { return &workv1alpha1.ResourceBinding{} }
	withCondition := func(condition string) *workv1alpha1.ResourceBinding {
		b := plain()
		b.Status.Conditions = []metav1.Condition{{Type: condition, Status: metav1.ConditionTrue}}
		return b
	}
	rolling := func(typ policyv1alpha1.RolloutType) *workv1alpha1.ResourceBinding {
		b := plain()
		b.Spec.Rollout = &policyv1alpha1.RolloutStrategy{Type: typ}
		return b
	}
	rolledOut := plain()
	rolledOut.Status.Rollout = &workv1alpha1.RolloutStatus{}
	for _, c := range []struct {
		name       string
		b          *workv1alpha1.ResourceBinding
		overridden bool
		want       bool
	}{
		{"plain", plain(), false, true},
		{"all at once", rolling(policyv1alpha1.RolloutAll), false, true},
		{"other conditions", withCondition(workv1alpha1.ConditionFullyApplied), false, true},
		{"override policies", plain(), true, false},
		{"overridden before", withCondition(workv1alpha1.ConditionOverridden), false, false},
		{"progressive", rolling(policyv1alpha1.RolloutProgressive), false, false},
		{"rollout status", rolledOut, false, false},
		{"rollout complete", withCondition(workv1alpha1.ConditionRolloutComplete), false, false},
	} {
		if got := shardedRender(c.b, c.overridden); got != c.want {
			t.Errorf("%s: sharded %t, want %t", c.name, got, c.want)
		}
	}
}
