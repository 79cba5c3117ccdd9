package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

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

// TestLazyPolicyChangeWaitsForTheTemplate: with activationPreference Lazy, a change of the policy reaches a
// template's binding only when the template next changes; a policy without it changes its template's binding
// at once (the witness shows the detector went through the policy change).
func TestLazyPolicyChangeWaitsForTheTemplate(t *testing.T) {
	ctx := context.Background()
	createNamespace(t, "lazy")
	web, witness := configMap("lazy", "web", nil), configMap("lazy", "witness", nil)
	create(t, web)
	create(t, witness)
	lazy := namespacedPolicy("lazy", "lazy", policyv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "ConfigMap", Name: "web"})
	lazy.Spec.ActivationPreference = policyv1alpha1.LazyActivation
	eager := namespacedPolicy("lazy", "eager", policyv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "ConfigMap", Name: "witness"})
	create(t, lazy)
	create(t, eager)
	placedOn := func(name string, clusters ...string) func() error {
		return func() error {
			b, err := binding(ctx, configMapKind, "lazy", name)
			if err != nil {
				return err
			}
			if got := b.Spec.Placement.ClusterAffinity.ClusterNames; !slices.Equal(got, clusters) {
				return fmt.Errorf("%s's binding has clusterNames %v, want %v", name, got, clusters)
			}
			return nil
		}
	}
	testenv.Eventually(t, hangGuard, "web's binding", placedOn("web", "nowhere"))
	testenv.Eventually(t, hangGuard, "the witness's binding", placedOn("witness", "nowhere"))

	elsewhere := func(s *policyv1alpha1.PropagationSpec) {
		s.Placement.ClusterAffinity = &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"elsewhere"}}
	}
	updatePolicy(t, lazy, elsewhere)
	updatePolicy(t, eager, elsewhere)
	testenv.Eventually(t, hangGuard, "the witness follows its policy", placedOn("witness", "elsewhere"))
	time.Sleep(time.Second) // the negative assertion: web's reconcile of the same pass keeps its binding
	if err := placedOn("web", "nowhere")(); err != nil {
		t.Fatalf("a Lazy policy's change reached a template that did not change: %v", err)
	}

	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(web), web); err != nil {
			return err
		}
		web.Data = map[string]string{"v": "2"}
		return env.Client.Update(ctx, web)
	}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, hangGuard, "web's change brings the policy's", placedOn("web", "elsewhere"))
}
