package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// TestPolicyAfterTemplates: a policy created after its templates takes every one of them, and so does a
// policy whose selector is widened to templates that exist already. (Both used to crawl: the policy pass
// raced the template reconciler and backed off one binding at a time.)
func TestPolicyAfterTemplates(t *testing.T) {
	ctx := context.Background()
	hub := framework.StartHub(t)
	m1 := framework.StartMember(t, "m1")
	framework.JoinPull(t, hub, m1)
	framework.WaitClustersReady(t, hub, "m1")

	createBatch := func(batch string, n int) []string {
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprintf("%s-%d", batch, i)
			d := deployment(metav1.NamespaceDefault, names[i], 0)
			d.Labels = map[string]string{"batch": batch}
			if _, err := hub.Kube.AppsV1().Deployments(metav1.NamespaceDefault).Create(ctx, d, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		return names
	}
	// waitClaimed waits for every Deployment's binding and its Work for m1; the timeout only guards against
	// a hang.
	waitClaimed := func(names []string) {
		t.Helper()
		testenv.Eventually(t, 3*time.Minute, fmt.Sprintf("bindings and Works of %d Deployments", len(names)), func() error {
			// Two lists per look rather than a read per object: the client's own rate limit would
			// otherwise be what this measures.
			bindings := &workv1alpha1.ResourceBindingList{}
			if err := hub.Client.List(ctx, bindings, client.InNamespace(metav1.NamespaceDefault)); err != nil {
				return err
			}
			works := &workv1alpha1.WorkList{}
			if err := hub.Client.List(ctx, works, client.InNamespace("flotilla-cluster-m1")); err != nil {
				return err
			}
			bound, rendered := map[string]bool{}, map[string]bool{}
			for _, b := range bindings.Items {
				bound[b.Name] = true
			}
			for _, w := range works.Items {
				rendered[w.Name] = true
			}
			missing := 0
			for _, name := range names {
				b := &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault,
					Name: workv1alpha1.BindingName(schema.GroupKind{Group: "apps", Kind: "Deployment"}, name)}}
				if !bound[b.Name] || !rendered[workv1alpha1.WorkName(b.Namespace, b.Name)] {
					missing++
				}
			}
			if missing > 0 {
				return fmt.Errorf("%d of %d Deployments have no binding or no Work", missing, len(names))
			}
			return nil
		})
	}

	// As on any hub in use, some policy selects Deployments already: the templates the new policy takes
	// come from its policy pass, not from the first look at a newly watched kind.
	if err := hub.Client.Create(ctx, propagationPolicy(metav1.NamespaceDefault, "unrelated", deploymentSelector("unrelated"), placementOn("m1"))); err != nil {
		t.Fatal(err)
	}
	first := createBatch("first", 100)
	policy := propagationPolicy(metav1.NamespaceDefault, "batches", policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment",
		LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "batch", Operator: metav1.LabelSelectorOpIn, Values: []string{"first"}}}}}, placementOn("m1"))
	if err := hub.Client.Create(ctx, policy); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	waitClaimed(first)
	t.Logf("100 templates claimed and rendered %s after their policy", time.Since(start).Round(time.Millisecond))

	second := createBatch("second", 100)
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := hub.Client.Get(ctx, client.ObjectKeyFromObject(policy), policy); err != nil {
			return err
		}
		policy.Spec.ResourceSelectors[0].LabelSelector.MatchExpressions[0].Values = []string{"first", "second"}
		return hub.Client.Update(ctx, policy)
	}); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	waitClaimed(append(first, second...))
	t.Logf("100 more claimed and rendered %s after the selector was widened", time.Since(start).Round(time.Millisecond))
}
