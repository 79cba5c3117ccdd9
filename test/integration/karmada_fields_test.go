package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	scheduled := reconciles(t, "scheduler")
	create(t, policy)
	testenv.Eventually(t, hangGuard, "web's binding names the other scheduler", func() error {
		b, err := binding(ctx, configMapKind, "other-scheduler", "web")
		if err == nil && b.Spec.SchedulerName != "other-scheduler" {
			err = fmt.Errorf("schedulerName %q", b.Spec.SchedulerName)
		}
		return err
	})
	// The negative assertion, once the scheduler has taken the binding in and has nothing left to do.
	waitReconciled(t, "scheduler", scheduled, 1)
	b, err := binding(ctx, configMapKind, "other-scheduler", "web")
	if err != nil {
		t.Fatal(err)
	}
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
	passes, templates := reconciles(t, "detector-policies"), reconciles(t, "detector")
	updatePolicy(t, lazy, elsewhere)
	updatePolicy(t, eager, elsewhere)
	testenv.Eventually(t, hangGuard, "the witness follows its policy", placedOn("witness", "elsewhere"))
	// The negative assertion, once the pass and both templates' reconciles are done: web's kept its binding.
	waitReconciled(t, "detector-policies", passes, 1)
	waitReconciled(t, "detector", templates, 2)
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

// TestPolicyStatusCountsClaims: a policy's status counts the templates it claims and names the first ones,
// follows deletions, and its Honoured condition says when a selector cannot be honoured.
func TestPolicyStatusCountsClaims(t *testing.T) {
	ctx := context.Background()
	createNamespace(t, "policy-status")
	for _, name := range []string{"c", "a", "b"} {
		create(t, configMap("policy-status", name, nil))
	}
	pp := namespacedPolicy("policy-status", "all", policyv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "ConfigMap"})
	create(t, pp)
	claims := func(n int32, names ...string) func() error {
		return func() error {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pp), pp); err != nil {
				return err
			}
			s := pp.Status
			if s.ClaimedTemplates != n || !slices.Equal(s.Templates, names) || !meta.IsStatusConditionTrue(s.Conditions, policyv1alpha1.ConditionHonoured) {
				return fmt.Errorf("status %+v", s)
			}
			return nil
		}
	}
	testenv.Eventually(t, hangGuard, "three claims", claims(3, "ConfigMap policy-status/a", "ConfigMap policy-status/b", "ConfigMap policy-status/c"))
	if err := env.Client.Delete(ctx, configMap("policy-status", "b", nil)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, hangGuard, "two claims", claims(2, "ConfigMap policy-status/a", "ConfigMap policy-status/c"))

	unserved := clusterPolicy("policy-status-unserved", policyv1alpha1.ResourceSelector{APIVersion: "gadgets.example.com/v1", Kind: "Gadget"})
	create(t, unserved)
	testenv.Eventually(t, hangGuard, "Honoured=False on a kind the hub does not serve", func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(unserved), unserved); err != nil {
			return err
		}
		c := meta.FindStatusCondition(unserved.Status.Conditions, policyv1alpha1.ConditionHonoured)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != "KindNotServed" ||
			!strings.Contains(c.Message, "resourceSelectors[0]: the hub does not serve gadgets.example.com/v1 Gadget") {
			return fmt.Errorf("conditions %+v", unserved.Status.Conditions)
		}
		return nil
	})
}

// TestDependentOverridesHoldTheTemplate: a template whose policy names an override policy that does not exist
// gets no binding, and the policy's Honoured condition names the missing one; once it exists the template is
// claimed.
func TestDependentOverridesHoldTheTemplate(t *testing.T) {
	ctx := context.Background()
	createNamespace(t, "dependent")
	create(t, configMap("dependent", "web", nil))
	pp := namespacedPolicy("dependent", "web", policyv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "ConfigMap", Name: "web"})
	pp.Spec.DependentOverrides = []string{"web-eu"}
	passes, templates := reconciles(t, "detector-policies"), reconciles(t, "detector")
	create(t, pp)
	testenv.Eventually(t, hangGuard, "Honoured=False names the missing override policy", func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pp), pp); err != nil {
			return err
		}
		c := meta.FindStatusCondition(pp.Status.Conditions, policyv1alpha1.ConditionHonoured)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != "DependentOverridesMissing" ||
			!strings.Contains(c.Message, "OverridePolicy dependent/web-eu not found") {
			return fmt.Errorf("conditions %+v", pp.Status.Conditions)
		}
		return nil
	})
	// The negative assertion, once the pass and the template's reconcile are done: it bound nothing.
	waitReconciled(t, "detector-policies", passes, 1)
	waitReconciled(t, "detector", templates, 1)
	if _, err := binding(ctx, configMapKind, "dependent", "web"); !apierrors.IsNotFound(err) {
		t.Fatalf("the template was bound before its dependent override policy existed: %v", err)
	}

	create(t, &policyv1alpha1.OverridePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "dependent", Name: "web-eu"},
		Spec: policyv1alpha1.OverrideSpec{OverrideRules: []policyv1alpha1.RuleWithCluster{{Overriders: policyv1alpha1.Overriders{
			LabelsOverrider: []policyv1alpha1.LabelAnnotationOverrider{{Operator: "add", Value: map[string]string{"region": "eu"}}}}}}}})
	testenv.Eventually(t, hangGuard, "web's binding once web-eu exists", func() error {
		_, err := binding(ctx, configMapKind, "dependent", "web")
		return err
	})
	testenv.Eventually(t, hangGuard, "Honoured=True", func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pp), pp); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(pp.Status.Conditions, policyv1alpha1.ConditionHonoured) || pp.Status.ClaimedTemplates != 1 {
			return fmt.Errorf("status %+v", pp.Status)
		}
		return nil
	})
}
