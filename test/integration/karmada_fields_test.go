package integration

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// updatePolicy edits a PropagationPolicy, retrying on conflicts.
func updatePolicy(t *testing.T, p *policyv1alpha1.PropagationPolicy, edit func(s *policyv1alpha1.PropagationSpec)) {
	t.Helper()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		edit(&p.Spec)
		return env.Client.Update(context.Background(), p)
	}); err != nil {
		t.Fatal(err)
	}
}

// TestOtherSchedulersBindingsLeftAlone: the binding of a policy naming another scheduler gets no placement
// and no Scheduled condition from Flotilla's scheduler; once the policy names the default scheduler, it is
// placed.
func TestOtherSchedulersBindingsLeftAlone(t *testing.T) {
	ctx := context.Background()
	createNamespace(t, "other-scheduler")
	placeableCluster(t, "other-scheduler", map[string]string{"other-scheduler": "yes"})
	create(t, configMap("other-scheduler", "web", nil))
	policy := placedPolicy("other-scheduler", map[string]string{"other-scheduler": "yes"})
	policy.Spec.SchedulerName = "other-scheduler"
	create(t, policy)
	testenv.Eventually(t, hangGuard, "web's binding names the other scheduler", func() error {
		b, err := binding(ctx, configMapKind, "other-scheduler", "web")
		if err == nil && b.Spec.SchedulerName != "other-scheduler" {
			err = fmt.Errorf("schedulerName %q", b.Spec.SchedulerName)
		}
		return err
	})
	// The negative assertion: a binding that stays unchanged for 2 s was not placed.
	b := settledBinding(t, "other-scheduler", "web")
	if len(b.Spec.Clusters) > 0 || meta.FindStatusCondition(b.Status.Conditions, workv1alpha1.ConditionScheduled) != nil {
		t.Fatalf("Flotilla's scheduler placed a binding of another scheduler: clusters %v, conditions %v", b.Spec.Clusters, b.Status.Conditions)
	}

	updatePolicy(t, policy, func(s *policyv1alpha1.PropagationSpec) { s.SchedulerName = policyv1alpha1.DefaultSchedulerName })
	waitPlaced(t, "other-scheduler", "web", "other-scheduler")
}
