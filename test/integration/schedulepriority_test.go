package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/detector"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// TestSchedulePriorityFromPriorityClass: a policy's schedulePriority reaches its templates' bindings as the
// value of the hub's PriorityClass it names (the scheduler's queue orders by it:
// internal/scheduler/priority_test.go). While the PriorityClass does not exist the bindings carry no
// priority and the policy's Honoured condition names the class; creating it gives them its value.
func TestSchedulePriorityFromPriorityClass(t *testing.T) {
	ctx := context.Background()
	const namespace, class = "schedule-priority", "flotilla-test-urgent"
	createNamespace(t, namespace)
	create(t, configMap(namespace, "web", nil))
	policy := namespacedPolicy(namespace, "urgent", policyv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "ConfigMap", Name: "web"})
	policy.Spec.SchedulePriority = &policyv1alpha1.SchedulePriority{PriorityClassSource: "KubePriorityClass", PriorityClassName: class}
	create(t, policy)

	honoured := func(status metav1.ConditionStatus, reason, message string) func() error {
		return func() error {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(policy), policy); err != nil {
				return err
			}
			c := meta.FindStatusCondition(policy.Status.Conditions, policyv1alpha1.ConditionHonoured)
			if c == nil || c.Status != status || c.Reason != reason || !strings.Contains(c.Message, message) {
				return fmt.Errorf("Honoured %+v", c)
			}
			return nil
		}
	}
	testenv.Eventually(t, hangGuard, "Honoured=False naming the missing PriorityClass",
		honoured(metav1.ConditionFalse, detector.ReasonPriorityClassNotFound, "PriorityClass "+class+" not found"))
	testenv.Eventually(t, hangGuard, "web's binding, without a priority", func() error {
		b, err := binding(ctx, configMapKind, namespace, "web")
		if err == nil && b.Spec.SchedulePriority != nil {
			t.Fatalf("a binding whose PriorityClass does not exist has the priority %+v", b.Spec.SchedulePriority)
		}
		return err
	})

	create(t, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Value: 1000})
	testenv.Eventually(t, hangGuard, "the binding takes the PriorityClass's value", func() error {
		b, err := binding(ctx, configMapKind, namespace, "web")
		if err != nil {
			return err
		}
		if b.Spec.SchedulePriority == nil || b.Spec.SchedulePriority.Priority != 1000 {
			return fmt.Errorf("schedulePriority %+v", b.Spec.SchedulePriority)
		}
		return nil
	})
	testenv.Eventually(t, hangGuard, "Honoured=True", honoured(metav1.ConditionTrue, detector.ReasonHonoured, ""))
}
