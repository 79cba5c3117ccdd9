package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/clusterset"
	"github.com/flotilla-io/flotilla/internal/scheduler"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// labelledSet creates the ClusterSet name, of the Clusters labelled cluster.flotilla.io/clusterset=name.
func labelledSet(t *testing.T, name string) {
	t.Helper()
	create(t, &clusterv1alpha1.ClusterSet{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: clusterv1alpha1.ClusterSetSpec{ClusterSelector: clusterv1alpha1.ClusterSetSelector{SelectorType: clusterv1alpha1.ExclusiveClusterSetLabel}}})
}

// bindNamespaceTo binds ClusterSet set to namespace and returns the binding.
func bindNamespaceTo(t *testing.T, namespace, set string) *clusterv1alpha1.ClusterSetBinding {
	t.Helper()
	b := &clusterv1alpha1.ClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: set},
		Spec: clusterv1alpha1.ClusterSetBindingSpec{ClusterSet: set}}
	create(t, b)
	return b
}

// labelsInSet are the labels of a test Cluster in set, selected by the test's policy by test.
func labelsInSet(test, set string) map[string]string {
	return map[string]string{test: "yes", clusterv1alpha1.LabelClusterSet: set}
}

// waitUnscheduled waits until the binding of ConfigMap namespace/name says Scheduled=False with a message
// containing each of want.
func waitUnscheduled(t *testing.T, namespace, name string, want ...string) *workv1alpha1.ResourceBinding {
	t.Helper()
	var b *workv1alpha1.ResourceBinding
	testenv.Eventually(t, hangGuard, fmt.Sprintf("%s/%s not scheduled: %q", namespace, name, want), func() error {
		var err error
		if b, err = binding(context.Background(), configMapKind, namespace, name); err != nil {
			return err
		}
		c := meta.FindStatusCondition(b.Status.Conditions, workv1alpha1.ConditionScheduled)
		if c == nil || c.Status != metav1.ConditionFalse {
			return fmt.Errorf("scheduled: %+v", c)
		}
		for _, w := range want {
			if !strings.Contains(c.Message, w) {
				return fmt.Errorf("scheduled: %s: %s", c.Reason, c.Message)
			}
		}
		return nil
	})
	return b
}

// TestClusterSetConfinesANamespace: a namespace bound to a set places only on its clusters, and the others
// say why in notPlacedOn and flotilla explain. When a cluster leaves the set, the replicas there leave by
// graceful eviction: a task appears, and the old cluster keeps its copy until the replacement is healthy.
// When the namespace loses its last binding on a hub that requires bindings, nothing is granted and the
// placement stays as it is.
func TestClusterSetConfinesANamespace(t *testing.T) {
	ctx := context.Background()
	const ns, test = "tenancy-bound", "tenancy-bound"
	a, b, c := "tenancy-bound-a", "tenancy-bound-b", "tenancy-bound-c"
	createNamespace(t, ns)
	labelledSet(t, "tenancy-prod")
	labelledSet(t, "tenancy-dev")
	placeableCluster(t, a, labelsInSet(test, "tenancy-prod"))
	placeableCluster(t, b, labelsInSet(test, "tenancy-prod"))
	placeableCluster(t, c, labelsInSet(test, "tenancy-dev"))
	setBinding := bindNamespaceTo(t, ns, "tenancy-prod")
	create(t, configMap(ns, "web", nil))
	create(t, placedPolicy(ns, map[string]string{test: "yes"}))
	placed := waitPlaced(t, ns, "web", a, b)

	refusal := c + " is in no ClusterSet bound to namespace " + ns
	if !slices.Contains(placed.Status.NotPlacedOn, workv1alpha1.ClusterVerdict{Cluster: c, Plugin: scheduler.PluginClusterSetGrant, Reason: refusal}) {
		t.Errorf("notPlacedOn %+v does not say %q", placed.Status.NotPlacedOn, refusal)
	}
	out, err := runFlotilla(ctx, "explain", "configmap/web", "-n", ns)
	if err != nil {
		t.Fatalf("flotilla explain: %v\n%s", err, out)
	}
	if !strings.Contains(strings.Join(strings.Fields(out), " "), c+" no - ClusterSetGrant: "+refusal) {
		t.Errorf("flotilla explain does not say %q:\n%s", refusal, out)
	}

	// b leaves the set: the copy there stays until the one left (a) is healthy.
	labelCluster(t, b, labelsInSet(test, "tenancy-dev"))
	moved := waitPlaced(t, ns, "web", a)
	if tasks := moved.Spec.GracefulEvictionTasks; len(tasks) != 1 || tasks[0].FromCluster != b || tasks[0].PurgeMode != "Gracefully" {
		t.Fatalf("eviction tasks %+v, want one graceful task from %s", tasks, b)
	}
	if _, err := bindingWork(t, ns, "web", b); err != nil {
		t.Fatalf("the Work in %s before the replacement is healthy: %v", b, err)
	}
	reportHealth(t, ns, "web", a, workv1alpha1.ResourceHealthy, `{}`)
	releaseWork(t, ns, "web", b)
	testenv.Eventually(t, hangGuard, "the eviction task ends", func() error {
		after, err := binding(ctx, configMapKind, ns, "web")
		if err != nil {
			return err
		}
		if len(after.Spec.GracefulEvictionTasks) != 0 {
			return fmt.Errorf("tasks %+v", after.Spec.GracefulEvictionTasks)
		}
		return nil
	})

	// The last binding goes on a hub that requires bindings: nothing is granted, the placement stays.
	env.SetClusterSetMode(t, clusterset.RequireBindings)
	if err := env.Client.Delete(ctx, setBinding); err != nil {
		t.Fatal(err)
	}
	stayed := waitUnscheduled(t, ns, "web", "in no ClusterSet bound to namespace "+ns, "the current placement stays")
	if len(stayed.Spec.Clusters) != 1 || stayed.Spec.Clusters[0].Name != a || len(stayed.Spec.GracefulEvictionTasks) != 0 {
		t.Errorf("with nothing granted the placement changed: clusters %+v, tasks %+v", stayed.Spec.Clusters, stayed.Spec.GracefulEvictionTasks)
	}
}

// TestClusterSetMode: a namespace without a ClusterSetBinding places nowhere on a hub that requires
// bindings, saying why, and anywhere once the hub is switched to open, with no restart.
func TestClusterSetMode(t *testing.T) {
	const ns, test = "tenancy-unbound", "tenancy-unbound"
	createNamespace(t, ns)
	placeableCluster(t, "tenancy-unbound-a", map[string]string{test: "yes"})
	placeableCluster(t, "tenancy-unbound-b", map[string]string{test: "yes"})
	env.SetClusterSetMode(t, clusterset.RequireBindings)
	create(t, configMap(ns, "web", nil))
	create(t, placedPolicy(ns, map[string]string{test: "yes"}))
	// The hub holds other tests' clusters too: every one is refused for the grant before anything else.
	b := waitUnscheduled(t, ns, "web", "are in no ClusterSet bound to namespace "+ns)
	if len(b.Spec.Clusters) != 0 {
		t.Fatalf("an unbound namespace placed on %+v under RequireBindings", b.Spec.Clusters)
	}
	if c := meta.FindStatusCondition(b.Status.Conditions, workv1alpha1.ConditionScheduled); c.Reason != scheduler.ReasonNoClusterFit {
		t.Errorf("Scheduled reason %s, want %s", c.Reason, scheduler.ReasonNoClusterFit)
	}

	env.SetClusterSetMode(t, clusterset.Open)
	waitPlaced(t, ns, "web", "tenancy-unbound-a", "tenancy-unbound-b")
}

// TestClusterSetLeavesClusterPoliciesAlone: a ClusterPropagationPolicy is an admin's and never confined: it
// places a ConfigMap of a namespace without a binding on a hub that requires bindings.
func TestClusterSetLeavesClusterPoliciesAlone(t *testing.T) {
	const ns, test = "tenancy-admin", "tenancy-admin"
	createNamespace(t, ns)
	placeableCluster(t, "tenancy-admin-a", labelsInSet(test, "tenancy-admin-none"))
	env.SetClusterSetMode(t, clusterset.RequireBindings)
	create(t, configMap(ns, "web", nil))
	spec := placedPolicy(ns, map[string]string{test: "yes"}).Spec
	spec.ResourceSelectors = []policyv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "web"}}
	create(t, &policyv1alpha1.ClusterPropagationPolicy{ObjectMeta: metav1.ObjectMeta{Name: test}, Spec: spec})
	waitPlaced(t, ns, "web", "tenancy-admin-a")
}
