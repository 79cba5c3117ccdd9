package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// servesDeployments adds apps/v1 Deployments to a placeable Cluster's API list.
func servesDeployments(t *testing.T, name string) {
	t.Helper()
	updateClusterStatus(t, name, func(s *clusterv1alpha1.ClusterStatus) {
		s.APIEnablements = append(s.APIEnablements, clusterv1alpha1.APIEnablement{GroupVersion: "apps/v1",
			Resources: []clusterv1alpha1.APIResource{{Name: "deployments", Kind: "Deployment"}}})
	})
}

// waitDeploymentBinding waits until the binding of Deployment namespace/name is placed on exactly want
// (cluster → replicas) and its Scheduled condition has reason, and returns it.
func waitDeploymentBinding(t *testing.T, namespace, name string, want map[string]int32, reason string) *workv1alpha1.ResourceBinding {
	t.Helper()
	var b *workv1alpha1.ResourceBinding
	testenv.Eventually(t, hangGuard, fmt.Sprintf("%s/%s on %v, Scheduled %s", namespace, name, want, reason), func() error {
		var err error
		if b, err = binding(context.Background(), deploymentKind, namespace, name); err != nil {
			return err
		}
		got := map[string]int32{}
		for _, c := range b.Spec.Clusters {
			got[c.Name] = c.Replicas
		}
		cond := meta.FindStatusCondition(b.Status.Conditions, workv1alpha1.ConditionScheduled)
		if fmt.Sprint(got) != fmt.Sprint(want) || cond == nil || cond.Reason != reason {
			return fmt.Errorf("placed on %v, Scheduled %+v", got, cond)
		}
		return nil
	})
	return b
}

// TestPolicyFollowsAPlacement: a PropagationPolicy with a placementRef places its Deployment on the one
// cluster the Placement decided, with the Deployment's replicas; a change of the Placement's predicate
// moves it; deleting the Placement keeps the placement and says why.
func TestPolicyFollowsAPlacement(t *testing.T) {
	ctx := context.Background()
	const ns, set = "plref", "plref-set"
	createNamespace(t, ns)
	exclusiveSet(t, set)
	create(t, setBinding(ns, set))
	for _, c := range []struct{ name, tier string }{{"plref-gold", "gold"}, {"plref-silver", "silver"}} {
		placeableCluster(t, c.name, map[string]string{clusterv1alpha1.LabelClusterSet: set, "tier": c.tier})
		servesDeployments(t, c.name)
	}
	tier := func(v string) []clusterv1alpha1.ClusterPredicate {
		return []clusterv1alpha1.ClusterPredicate{{RequiredClusterSelector: clusterv1alpha1.ClusterSelector{
			LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": v}}}}}
	}
	p := &clusterv1alpha1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
	p.Spec.NumberOfClusters = ptr.To(int32(1))
	p.Spec.Predicates = tier("gold")
	// The test clusters have no agent: the health monitor taints them once their grace period is over.
	p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	create(t, p)
	deployment := webDeployment(ns, "web", nil)
	deployment.Spec.Replicas = ptr.To(int32(3))
	create(t, deployment)
	create(t, &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: policyv1alpha1.PropagationSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment"}},
			PlacementRef:      &policyv1alpha1.PlacementRef{Name: "web"},
		}})
	placed := waitDeploymentBinding(t, ns, "web", map[string]int32{"plref-gold": 3}, scheduler.ReasonScheduled)
	if want := (workv1alpha1.ClusterVerdict{Cluster: "plref-silver", Plugin: scheduler.PluginPlacementDecisions,
		Reason: "are not decided by Placement web"}); !slices.Contains(placed.Status.NotPlacedOn, want) {
		t.Errorf("notPlacedOn %+v lacks %+v", placed.Status.NotPlacedOn, want)
	}

	// The predicate now picks the other cluster: the binding follows.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		p.Spec.Predicates = tier("silver")
		return env.Client.Update(ctx, p)
	}); err != nil {
		t.Fatal(err)
	}
	waitDeploymentBinding(t, ns, "web", map[string]int32{"plref-silver": 3}, scheduler.ReasonScheduled)

	// The Placement goes: the placement stays, and the binding says why.
	if err := env.Client.Delete(ctx, p); err != nil {
		t.Fatal(err)
	}
	stayed := waitDeploymentBinding(t, ns, "web", map[string]int32{"plref-silver": 3}, scheduler.ReasonPlacementNotFound)
	cond := meta.FindStatusCondition(stayed.Status.Conditions, workv1alpha1.ConditionScheduled)
	if want := "Placement web does not exist in namespace plref; the current placement stays"; cond.Status != metav1.ConditionFalse || cond.Message != want {
		t.Errorf("Scheduled %s %q, want False %q", cond.Status, cond.Message, want)
	}
}
