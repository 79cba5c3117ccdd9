package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// TestStaticWeightsDivideAndPolicyDeletionKeepsWorkload: replicas divide 2:1 by static weights, and deleting
// the policy releases the binding but leaves the workload running where it was.
func TestStaticWeightsDivideAndPolicyDeletionKeepsWorkload(t *testing.T) {
	ctx := context.Background()
	f := useFleet(t)
	f.createDeployment(t, deployment(f.ns, "split", 3))
	placement := placementOn("m1", "m2")
	placement.ReplicaScheduling = &policyv1alpha1.ReplicaSchedulingStrategy{
		ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingDivided,
		ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionWeighted,
		WeightPreference: &policyv1alpha1.ClusterPreferences{StaticWeightList: []policyv1alpha1.StaticClusterWeight{
			{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"m1"}}, Weight: 2},
			{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"m2"}}, Weight: 1},
		}},
	}
	p := f.createPolicy(t, "split", deploymentSelector("split"), placement)
	waitPlaced(t, f.ns, "split", map[*framework.Cluster]int32{f.m1: 2, f.m2: 1, f.m3: -1})

	if err := f.hub.Client.Delete(ctx, p); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyGone(t, f.hub.Client, &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "split-deployment"}}, time.Minute)
	if _, err := f.hub.Kube.AppsV1().Deployments(f.ns).Get(ctx, "split", metav1.GetOptions{}); err != nil {
		t.Fatalf("the template after its policy was deleted: %v", err)
	}
	waitPlaced(t, f.ns, "split", map[*framework.Cluster]int32{f.m1: 2, f.m2: 1, f.m3: -1})
}

// TestDynamicWeightsFollowFreeCapacity: replicas divide by each cluster's free capacity, and follow it when it
// moves to the other member.
func TestDynamicWeightsFollowFreeCapacity(t *testing.T) {
	ctx := context.Background()
	f := useFleet(t)
	f.memberNamespace(t, f.m1)
	f.memberNamespace(t, f.m2)
	// ballast takes 72 of a member's 96 CPUs (3 nodes × 32), leaving room for 6 replicas of 4 CPUs
	// against 24 on the other member: 5 replicas divide 4:1 towards the emptier one.
	ballast := func(c *framework.Cluster) {
		d := deployment(f.ns, "ballast", 3)
		d.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("24")}
		if _, err := c.Kube.AppsV1().Deployments(f.ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitAllocatedCPU := func(c *framework.Cluster, cpus int64) {
		testenv.Eventually(t, time.Minute, fmt.Sprintf("the hub sees %d CPUs allocated in %s", cpus, c.Name), func() error {
			cluster := &clusterv1alpha1.Cluster{}
			if err := f.hub.Client.Get(ctx, client.ObjectKey{Name: c.Name}, cluster); err != nil {
				return err
			}
			var got resource.Quantity
			if rs := cluster.Status.ResourceSummary; rs != nil {
				got = rs.Allocated[corev1.ResourceCPU]
			}
			// The ballast, and less than a CPU of what tests beside this one run there.
			if m := got.MilliValue(); m < cpus*1000 || m >= (cpus+1)*1000 {
				return fmt.Errorf("%s allocated", got.String())
			}
			return nil
		})
	}
	dynamic := func(name string) {
		d := deployment(f.ns, name, 5)
		d.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}
		f.createDeployment(t, d)
		placement := placementOn("m1", "m2")
		placement.ReplicaScheduling = &policyv1alpha1.ReplicaSchedulingStrategy{
			ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingDivided,
			ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionWeighted,
			WeightPreference:          &policyv1alpha1.ClusterPreferences{DynamicWeight: policyv1alpha1.DynamicWeightByAvailableReplicas},
		}
		f.createPolicy(t, name, deploymentSelector(name), placement)
	}

	ballast(f.m2)
	waitAllocatedCPU(f.m2, 72)
	dynamic("roomy")
	waitPlaced(t, f.ns, "roomy", map[*framework.Cluster]int32{f.m1: 4, f.m2: 1, f.m3: -1})
	if err := f.hub.Kube.AppsV1().Deployments(f.ns).Delete(ctx, "roomy", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPlaced(t, f.ns, "roomy", map[*framework.Cluster]int32{f.m1: -1, f.m2: -1})

	// The capacity moves to the other member; a new workload follows it.
	if err := f.m2.Kube.AppsV1().Deployments(f.ns).Delete(ctx, "ballast", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ballast(f.m1)
	waitAllocatedCPU(f.m2, 0)
	waitAllocatedCPU(f.m1, 72)
	dynamic("roomy2")
	waitPlaced(t, f.ns, "roomy2", map[*framework.Cluster]int32{f.m1: 1, f.m2: 4, f.m3: -1})
	// The capacity the test took is given back, for the tests after it.
	for _, err := range []error{
		f.hub.Kube.AppsV1().Deployments(f.ns).Delete(ctx, "roomy2", metav1.DeleteOptions{}),
		f.m1.Kube.AppsV1().Deployments(f.ns).Delete(ctx, "ballast", metav1.DeleteOptions{}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	waitAllocatedCPU(f.m1, 0)
}

// TestSpreadOverTwoRegions: a spread over two regions picks one cluster in each.
func TestSpreadOverTwoRegions(t *testing.T) {
	f := useFleet(t)
	f.createDeployment(t, deployment(f.ns, "spread", 1))
	f.createPolicy(t, "spread", deploymentSelector("spread"), policyv1alpha1.Placement{SpreadConstraints: []policyv1alpha1.SpreadConstraint{
		{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MaxGroups: 2},
		{SpreadByField: policyv1alpha1.SpreadByFieldRegion, MinGroups: 2, MaxGroups: 2},
	}})
	waitPlaced(t, f.ns, "spread", map[*framework.Cluster]int32{f.m1: 1, f.m2: -1, f.m3: 1})
}

// taint taints a cluster until the test ends.
func taint(t *testing.T, hub *framework.Cluster, cluster, taint string) {
	t.Helper()
	hub.Flotilla("taint", "cluster", cluster, taint)
	t.Cleanup(func() {
		hub.Flotilla("taint", "cluster", cluster, taint+"-")
		waitHealthy(t, hub, cluster)
	})
}

// TestAffinityGroupsFallBack: affinity groups fall back when the first group's cluster is tainted.
func TestAffinityGroupsFallBack(t *testing.T) {
	ctx := context.Background()
	f := useFleet(t)
	taint(t, f.hub, "m2", "maintenance:NoSchedule")
	f.createDeployment(t, deployment(f.ns, "groups", 1))
	f.createPolicy(t, "groups", deploymentSelector("groups"), policyv1alpha1.Placement{ClusterAffinities: []policyv1alpha1.ClusterAffinityTerm{
		{AffinityName: "primary", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"m2"}}},
		{AffinityName: "backup", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"m1"}}},
	}})
	waitPlaced(t, f.ns, "groups", map[*framework.Cluster]int32{f.m1: 1, f.m2: -1})
	rb := &workv1alpha1.ResourceBinding{}
	if err := f.hub.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "groups-deployment"}, rb); err != nil {
		t.Fatal(err)
	}
	if rb.Status.SchedulerObservedAffinityName != "backup" {
		t.Fatalf("binding uses group %q, want backup", rb.Status.SchedulerObservedAffinityName)
	}
}

// TestReschedulingFollowsClusterLabels: a placement by label follows the label from cluster to cluster; with
// no cluster left, the placement stays.
func TestReschedulingFollowsClusterLabels(t *testing.T) {
	ctx := context.Background()
	f := useFleet(t)
	t.Cleanup(func() { // the fleet's labels as they were: team=blue on m1 alone
		changeLabels(t, f.hub, "m1", func(l map[string]string) { l["team"] = "blue" })
		changeLabels(t, f.hub, "m2", func(l map[string]string) { delete(l, "team") })
	})
	f.createDeployment(t, deployment(f.ns, "labelled", 1))
	f.createPolicy(t, "labelled", deploymentSelector("labelled"), policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "blue"}}}})
	waitPlaced(t, f.ns, "labelled", map[*framework.Cluster]int32{f.m1: 1, f.m2: -1, f.m3: -1})

	changeLabels(t, f.hub, "m2", func(l map[string]string) { l["team"] = "blue" })
	changeLabels(t, f.hub, "m1", func(l map[string]string) { delete(l, "team") })
	scheduled := func(what string, check func(rb *workv1alpha1.ResourceBinding) error) {
		testenv.Eventually(t, time.Minute, what, func() error {
			rb := &workv1alpha1.ResourceBinding{}
			if err := f.hub.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "labelled-deployment"}, rb); err != nil {
				return err
			}
			return check(rb)
		})
	}
	scheduled("labelled follows the label", func(rb *workv1alpha1.ResourceBinding) error {
		if len(rb.Spec.Clusters) != 1 || rb.Spec.Clusters[0].Name != "m2" {
			return fmt.Errorf("placed on %+v: %+v", rb.Spec.Clusters, meta.FindStatusCondition(rb.Status.Conditions, workv1alpha1.ConditionScheduled))
		}
		return nil
	})
	waitPlaced(t, f.ns, "labelled", map[*framework.Cluster]int32{f.m1: -1, f.m2: 1, f.m3: -1})

	changeLabels(t, f.hub, "m2", func(l map[string]string) { delete(l, "team") })
	scheduled("Scheduled=False says why", func(rb *workv1alpha1.ResourceBinding) error {
		if c := meta.FindStatusCondition(rb.Status.Conditions, workv1alpha1.ConditionScheduled); c == nil || c.Status != metav1.ConditionFalse ||
			!strings.Contains(c.Message, "the current placement stays") {
			return fmt.Errorf("condition %+v", c)
		}
		return nil
	})
	waitPlaced(t, f.ns, "labelled", map[*framework.Cluster]int32{f.m1: -1, f.m2: 1, f.m3: -1})
}

// TestPreemptionTakesAClaimedTemplate: a higher-priority policy with preemption Always takes a template
// another policy claimed.
func TestPreemptionTakesAClaimedTemplate(t *testing.T) {
	f := useFleet(t)
	f.createDeployment(t, deployment(f.ns, "contested", 1))
	f.createPolicy(t, "contested-low", deploymentSelector("contested"), placementOn("m1"))
	waitPlaced(t, f.ns, "contested", map[*framework.Cluster]int32{f.m1: 1, f.m2: -1})
	f.createPolicy(t, "contested-high", deploymentSelector("contested"), placementOn("m2"), func(p *policyv1alpha1.PropagationPolicy) {
		p.Spec.Priority, p.Spec.Preemption = ptr.To[int32](10), policyv1alpha1.PreemptAlways
	})
	waitPlaced(t, f.ns, "contested", map[*framework.Cluster]int32{f.m1: -1, f.m2: 1})
}

// TestNoExecuteTaintMovesWorkloadWithoutGap: a NoExecute taint moves a workload to another cluster without a
// gap in availability.
func TestNoExecuteTaintMovesWorkloadWithoutGap(t *testing.T) {
	ctx := context.Background()
	f := useFleet(t)
	f.createDeployment(t, deployment(f.ns, "mover", 2))
	placement := placementOn("m1", "m2")
	placement.SpreadConstraints = []policyv1alpha1.SpreadConstraint{{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MaxGroups: 1}}
	f.createPolicy(t, "mover", deploymentSelector("mover"), placement)
	waitPlaced(t, f.ns, "mover", map[*framework.Cluster]int32{f.m1: 2, f.m2: -1})

	taint(t, f.hub, "m1", "evacuate:NoExecute")
	available := func(c *framework.Cluster) int32 {
		_, d, _ := replicasIn(ctx, c, f.ns, "mover")
		if d == nil {
			return 0
		}
		return d.Status.AvailableReplicas
	}
	testenv.Eventually(t, 2*time.Minute, "the workload leaves m1 for m2, never below 2 available", func() error {
		a1, a2 := available(f.m1), available(f.m2)
		if a1+a2 < 2 {
			t.Fatalf("availability gap: m1 %d + m2 %d available", a1, a2)
		}
		if got, _, _ := replicasIn(ctx, f.m1, f.ns, "mover"); got != -1 || a2 != 2 {
			return fmt.Errorf("m1 %d available (present: %v), m2 %d", a1, got != -1, a2)
		}
		return nil
	})
}
