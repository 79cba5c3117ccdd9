package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/clusterset"
	"github.com/flotilla-io/flotilla/internal/testenv"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// TestTenancy, on the shared fleet switched to require bindings: m1 and m2 in set prod (exclusive label),
// m3 in dev; team-a bound to prod, team-b to dev. team-b's policy naming m1 places nothing there and
// flotilla explain says why; a namespace without a binding places nowhere; relabelling m2 out of prod moves
// team-a's replicas to m1 with never fewer available than the template asks for.
func TestTenancy(t *testing.T) {
	ctx := context.Background()
	f := useFleet(t)
	hub := f.hub.Client
	teamA, teamB, unbound := f.ns, f.ns+"-b", f.ns+"-none"
	for _, ns := range []string{teamB, unbound} {
		createOnHub(t, hub, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	for _, set := range []string{"prod", "dev"} {
		createOnHub(t, hub, &clusterv1alpha1.ClusterSet{ObjectMeta: metav1.ObjectMeta{Name: set}})
	}
	setClusterSet(t, hub, "m1", "prod")
	setClusterSet(t, hub, "m2", "prod")
	setClusterSet(t, hub, "m3", "dev")
	setClusterSetMode(t, hub, clusterset.RequireBindings)
	t.Cleanup(func() { setClusterSetMode(t, hub, clusterset.Open) })
	createOnHub(t, hub, &clusterv1alpha1.ClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: teamA, Name: "prod"}, Spec: clusterv1alpha1.ClusterSetBindingSpec{ClusterSet: "prod"}})
	createOnHub(t, hub, &clusterv1alpha1.ClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: teamB, Name: "dev"}, Spec: clusterv1alpha1.ClusterSetBindingSpec{ClusterSet: "dev"}})

	// team-a: 2 replicas divided over what it is granted (m1 and m2). A copy is Available only 3 s after its
	// pods are ready, so a copy removed before its replacement is Available leaves a visible gap.
	web := deployment(teamA, "web", 2)
	web.Spec.MinReadySeconds = 3
	f.createDeployment(t, web)
	divided := policyv1alpha1.Placement{ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{}} // Divided, equal weights
	f.createPolicy(t, "web", deploymentSelector("web"), divided)
	waitPlaced(t, teamA, "web", map[*framework.Cluster]int32{f.m1: 1, f.m2: 1, f.m3: -1})

	// team-b names m1, which dev does not hold; a namespace without a binding places nowhere.
	for _, ns := range []string{teamB, unbound} {
		createOnHub(t, hub, deployment(ns, "web", 1))
		createOnHub(t, hub, propagationPolicy(ns, "web", deploymentSelector("web"), placementOn("m1")))
		waitRefused(t, hub, ns, "in no ClusterSet bound to namespace "+ns) // counted with the others refused alike
	}
	if out := strings.Join(strings.Fields(f.hub.Flotilla("explain", "deployment/web", "-n", teamB)), " "); !strings.Contains(out, "m1 no - ClusterSetGrant: m1 is in no ClusterSet bound to namespace "+teamB) {
		t.Errorf("flotilla explain does not say why not m1:\n%s", out)
	}
	for _, m := range []*framework.Cluster{f.m1, f.m2, f.m3} {
		for _, ns := range []string{teamB, unbound} {
			if replicas, _, err := replicasIn(ctx, m, ns, "web"); err != nil || replicas != -1 {
				t.Errorf("%s runs %s/web (%d replicas, %v)", m.Name, ns, replicas, err)
			}
		}
	}

	// m2 leaves prod: team-a's replica there moves to m1, m2's copy staying until m1's two are Available.
	setClusterSet(t, hub, "m2", "dev")
	watchAvailability(t, teamA, "web", 2, []*framework.Cluster{f.m2, f.m1}, 2*time.Minute, "team-a leaves m2", func() error {
		if replicas, _, err := replicasIn(ctx, f.m2, teamA, "web"); err != nil || replicas != -1 {
			return fmt.Errorf("m2 still runs its copy (%v)", err)
		}
		return nil
	})
	waitPlaced(t, teamA, "web", map[*framework.Cluster]int32{f.m1: 2, f.m2: -1, f.m3: -1})
}

// createOnHub creates obj on the hub and deletes it when the test ends.
func createOnHub(t *testing.T, hub client.Client, obj client.Object) {
	t.Helper()
	if err := hub.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
	t.Cleanup(func() { _ = hub.Delete(context.Background(), obj) })
}

// setClusterSet puts a Cluster in an exclusive ClusterSet by its label, and takes it out when the test ends.
func setClusterSet(t *testing.T, hub client.Client, cluster, set string) {
	t.Helper()
	label := func(value any) error {
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%s}}}`, clusterv1alpha1.LabelClusterSet, value)
		return hub.Patch(context.Background(), &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}},
			client.RawPatch(types.MergePatchType, []byte(patch)))
	}
	if err := label(fmt.Sprintf("%q", set)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = label("null") })
}

// setClusterSetMode switches the hub's recorded cluster-set mode.
func setClusterSetMode(t *testing.T, hub client.Client, mode clusterset.Mode) {
	t.Helper()
	patch := fmt.Sprintf(`{"data":{%q:%q}}`, clusterset.ModeKey, mode)
	if err := hub.Patch(context.Background(), clusterset.ModeObject(mode), client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
}

// waitRefused waits until the binding of Deployment namespace/web is not scheduled and says why.
func waitRefused(t *testing.T, hub client.Client, namespace, why string) {
	t.Helper()
	testenv.Eventually(t, time.Minute, namespace+"/web refused", func() error {
		rb := &workv1alpha1.ResourceBinding{}
		if err := hub.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: "web-deployment"}, rb); err != nil {
			return err
		}
		c := meta.FindStatusCondition(rb.Status.Conditions, workv1alpha1.ConditionScheduled)
		if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, why) || len(rb.Spec.Clusters) > 0 {
			return fmt.Errorf("placed on %+v, Scheduled %+v", rb.Spec.Clusters, c)
		}
		return nil
	})
}
