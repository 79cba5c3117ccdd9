package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/clusterstatus"
	"github.com/flotilla-io/flotilla/internal/scheduler"
	"github.com/flotilla-io/flotilla/internal/testenv"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// TestFailoverOfAPullMember: a frozen pull member (member and agent) is tainted unreachable:NoExecute, its
// replicas come up on the other member without a gap, its copy is removed once it returns, and `flotilla
// rebalance` puts replicas back on it.
func TestFailoverOfAPullMember(t *testing.T) {
	f := useFleet(t)
	failOver(t, f, f.m1, f.m2, true)
}

// TestFailoverOfAPushMember: the same for the push member m3, which has no agent: the hub itself loses it;
// and `flotilla rebalance` puts replicas back on it.
func TestFailoverOfAPushMember(t *testing.T) {
	f := useFleet(t)
	failOver(t, f, f.m3, f.m2, true)
}

// failoverTolerations tolerate a cluster's health NoExecute taints for seconds, so that a test's freeze is
// short: the hub's default is minutes.
func failoverTolerations(seconds int64) []corev1.Toleration {
	var out []corev1.Toleration
	for _, key := range []string{clusterv1alpha1.TaintClusterUnreachable, clusterv1alpha1.TaintClusterNotReady} {
		out = append(out, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute,
			TolerationSeconds: ptr.To(seconds)})
	}
	return out
}

// failOver divides a 4-replica Deployment over failing and surviving by their room (dynamic weights: a
// placement by capacity stays where it is until a fresh pass, so only the rebalance can bring replicas back),
// freezes failing, and follows the failover: the surviving member's available replicas never drop below its
// own share and reach all 4; the binding keeps an eviction task for failing while it is away; its copy is
// removed there only once it returns, the replacement still available; with rebalance, a rebalance places
// replicas on it again.
func failOver(t *testing.T, f *fleet, failing, surviving *framework.Cluster, rebalance bool) {
	t.Helper()
	ctx := context.Background()
	const name, replicas = "survivor", 4
	d := deployment(f.ns, name, replicas)
	// 64Gi of a member's 768Gi (3 nodes of 256Gi): room for 12 replicas in each member, so they divide 2:2.
	d.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Gi")}
	// The replacement replicas are Available 3 s after they are ready: the eviction task lasts that long at
	// least, and the samples see it.
	d.Spec.MinReadySeconds = 3
	f.createDeployment(t, d)
	t.Cleanup(func() { // the room the test took is given back to the tests after it
		if err := f.hub.Kube.AppsV1().Deployments(f.ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Error(err)
		}
	})
	placement := placementOn(failing.Name, surviving.Name)
	placement.ClusterTolerations = failoverTolerations(15)
	placement.ReplicaScheduling = &policyv1alpha1.ReplicaSchedulingStrategy{
		ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingDivided, ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionWeighted,
		WeightPreference: &policyv1alpha1.ClusterPreferences{DynamicWeight: policyv1alpha1.DynamicWeightByAvailableReplicas},
	}
	f.createPolicy(t, name, deploymentSelector(name), placement)
	placed := waitBindingPlaced(t, f, name+"-deployment", failing.Name, surviving.Name)
	waitPlaced(t, f.ns, name, map[*framework.Cluster]int32{failing: placed[failing.Name], surviving: placed[surviving.Name]})
	share := placed[surviving.Name]

	failing.Freeze()
	t.Cleanup(func() {
		failing.Resume()
		waitHealthy(t, f.hub, failing.Name)
	})
	var tainted, evicting bool
	watchAvailability(t, f.ns, name, share, []*framework.Cluster{surviving}, 2*time.Minute, "the replicas of frozen "+failing.Name+" come up on "+surviving.Name, func() error {
		if !tainted {
			tainted = hasHealthNoExecute(ctx, f.hub, failing.Name)
			return fmt.Errorf("%s has no NoExecute health taint yet", failing.Name)
		}
		rb := &workv1alpha1.ResourceBinding{}
		if err := f.hub.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: name + "-deployment"}, rb); err != nil {
			return err
		}
		task := evictionTask(rb, failing.Name)
		if task != nil && task.Reason == scheduler.ReasonTaintUntolerated {
			evicting = true
		}
		left := !slices.ContainsFunc(rb.Spec.Clusters, func(c workv1alpha1.TargetCluster) bool { return c.Name == failing.Name })
		if !left || task != nil {
			return fmt.Errorf("eviction of %s: placed on %+v, task %+v", failing.Name, rb.Spec.Clusters, task)
		}
		// The task is done: the replacement must be available by now (read after the binding, so that it
		// cannot have become available only since).
		if _, d, err := replicasIn(ctx, surviving, f.ns, name); err != nil || d == nil || d.Status.AvailableReplicas != replicas {
			t.Fatalf("the eviction of %s ended before %s ran all %d replicas: %v", failing.Name, surviving.Name, replicas, availability(d, err))
		}
		if !evicting {
			t.Fatalf("no sample saw an eviction task for %s while it was frozen", failing.Name)
		}
		return nil
	})

	// Back: the copy it kept is removed, and the replacement stays available meanwhile.
	failing.Resume()
	watchAvailability(t, f.ns, name, replicas, []*framework.Cluster{surviving}, 2*time.Minute, "returned "+failing.Name+" loses its old copy", func() error {
		if got, _, err := replicasIn(ctx, failing, f.ns, name); err != nil || got != -1 {
			return fmt.Errorf("%s still runs %d (%v)", failing.Name, got, err)
		}
		return nil
	})
	waitHealthy(t, f.hub, failing.Name)
	if !rebalance {
		return
	}
	// A fresh pass only places on a cluster whose served APIs and room the hub knows again.
	testenv.Eventually(t, time.Minute, failing.Name+" reports its APIs and room again", func() error {
		c := &clusterv1alpha1.Cluster{}
		if err := f.hub.Client.Get(ctx, client.ObjectKey{Name: failing.Name}, c); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(c.Status.Conditions, clusterv1alpha1.ClusterConditionAPIsComplete) || c.Status.ResourceSummary == nil ||
			c.Status.ResourceSummary.Allocatable.Memory().IsZero() {
			return fmt.Errorf("conditions %+v", c.Status.Conditions)
		}
		return nil
	})

	// A placement by capacity stays where it is; a rebalance places it afresh, on both members again.
	f.hub.Flotilla("rebalance", "deployment/"+name, "-n", f.ns)
	placed = waitBindingPlaced(t, f, name+"-deployment", failing.Name, surviving.Name)
	waitPlaced(t, f.ns, name, map[*framework.Cluster]int32{failing: placed[failing.Name], surviving: placed[surviving.Name]})
}

// waitBindingPlaced waits until the binding places replicas on every named cluster and returns them by
// cluster.
func waitBindingPlaced(t *testing.T, f *fleet, bindingName string, clusters ...string) map[string]int32 {
	t.Helper()
	placed := map[string]int32{}
	testenv.Eventually(t, 2*time.Minute, bindingName+" placed on "+strings.Join(clusters, " and "), func() error {
		rb := &workv1alpha1.ResourceBinding{}
		if err := f.hub.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: bindingName}, rb); err != nil {
			return err
		}
		clear(placed)
		for _, c := range rb.Spec.Clusters {
			placed[c.Name] = c.Replicas
		}
		for _, c := range clusters {
			if placed[c] == 0 {
				// What a failed rebalance needs to be understood: when it was asked for, when the binding was
				// last placed, and what the scheduler said.
				return fmt.Errorf("placed on %+v; reschedule triggered at %v, last scheduled at %v; %+v", rb.Spec.Clusters,
					rb.Spec.RescheduleTriggeredAt, rb.Status.LastScheduledTime, meta.FindStatusCondition(rb.Status.Conditions, workv1alpha1.ConditionScheduled))
			}
		}
		return nil
	})
	return placed
}

// availability says how many replicas of a member's Deployment are available, for a failure message.
func availability(d *appsv1.Deployment, err error) string {
	switch {
	case err != nil:
		return err.Error()
	case d == nil:
		return "no Deployment"
	}
	return fmt.Sprintf("%d of %d available", d.Status.AvailableReplicas, ptr.Deref(d.Spec.Replicas, 1))
}

// evictionTask is the binding's eviction task for a cluster, nil when it has none.
func evictionTask(rb *workv1alpha1.ResourceBinding, cluster string) *workv1alpha1.GracefulEvictionTask {
	i := slices.IndexFunc(rb.Spec.GracefulEvictionTasks, func(task workv1alpha1.GracefulEvictionTask) bool { return task.FromCluster == cluster })
	if i < 0 {
		return nil
	}
	return &rb.Spec.GracefulEvictionTasks[i]
}

// hasHealthNoExecute reports whether the hub's health monitor has a NoExecute taint on the cluster.
func hasHealthNoExecute(ctx context.Context, hub *framework.Cluster, name string) bool {
	_, taints, err := clusterHealth(ctx, hub, name)
	return err == nil && (contains(taints, clusterv1alpha1.TaintClusterUnreachable+":NoExecute") ||
		contains(taints, clusterv1alpha1.TaintClusterNotReady+":NoExecute"))
}

// TestMassFailureGuard: when every member stops at once, the hub is more likely the one cut off than the
// whole fleet down: no cluster keeps a NoExecute health taint, no binding gets an eviction task, and the
// clusters' Failover condition and an event say why. (Other tests' workloads may run on the members: the
// guard must spare them too.)
func TestMassFailureGuard(t *testing.T) {
	ctx := context.Background()
	f := useFleet(t)
	f.createDeployment(t, deployment(f.ns, "steady", 1))
	placement := placementOn("m1", "m2", "m3")
	placement.ClusterTolerations = failoverTolerations(20)
	f.createPolicy(t, "steady", deploymentSelector("steady"), placement)
	waitPlaced(t, f.ns, "steady", map[*framework.Cluster]int32{f.m1: 1, f.m2: 1, f.m3: 1})
	tasks := func() []string {
		bindings := &workv1alpha1.ResourceBindingList{}
		if err := f.hub.Client.List(ctx, bindings); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, rb := range bindings.Items {
			for _, task := range rb.Spec.GracefulEvictionTasks {
				// Only cluster failover counts: tests running beside this one move unhealthy applications.
				if task.Reason == scheduler.ReasonTaintUntolerated {
					out = append(out, rb.Namespace+"/"+rb.Name+" from "+task.FromCluster)
				}
			}
		}
		return out
	}
	before := tasks()

	members := []*framework.Cluster{f.m1, f.m2, f.m3}
	for _, m := range members {
		m.Freeze()
	}
	t.Cleanup(func() {
		for _, m := range members {
			m.Resume()
		}
		for _, m := range members {
			waitHealthy(t, f.hub, m.Name)
		}
	})
	noEviction := func() {
		if now := tasks(); len(now) > len(before) {
			t.Fatalf("the guard let evictions start: %v (before the freeze: %v)", now, before)
		}
	}
	testenv.Eventually(t, 2*time.Minute, "the hub sees every member unreachable and holds back failover", func() error {
		noEviction()
		guarded := false
		for _, m := range members {
			ready, taints, err := clusterHealth(ctx, f.hub, m.Name)
			if err != nil || ready == metav1.ConditionTrue || !contains(taints, clusterv1alpha1.TaintClusterUnreachable+":NoSchedule") {
				return fmt.Errorf("%s: Ready=%s taints=%v %v", m.Name, ready, taints, err)
			}
			if c := failoverCondition(ctx, f.hub, m.Name); c != nil && c.Status == metav1.ConditionFalse && c.Reason == clusterstatus.ReasonMassFailureGuard {
				guarded = true
			}
		}
		if !guarded {
			return fmt.Errorf("no Cluster's Failover condition says %s", clusterstatus.ReasonMassFailureGuard)
		}
		return nil
	})
	// Long enough for a toleration to run out had any NoExecute taint stayed: none stays, nothing moves.
	deadline := time.Now().Add(25 * time.Second)
	for time.Now().Before(deadline) {
		noEviction()
		for _, m := range members {
			if hasHealthNoExecute(ctx, f.hub, m.Name) {
				t.Fatalf("%s keeps a NoExecute health taint while every member is unreachable", m.Name)
			}
		}
		time.Sleep(time.Second)
	}
	events, err := f.hub.Kube.CoreV1().Events("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
		return e.InvolvedObject.Kind == "Cluster" && e.Reason == clusterstatus.ReasonMassFailureGuard
	}) {
		t.Fatalf("no event on a Cluster says %s", clusterstatus.ReasonMassFailureGuard)
	}
}

// failoverCondition is the cluster's Failover condition, which says what the health monitor did about
// failover and why; nil when absent or unreadable.
func failoverCondition(ctx context.Context, hub *framework.Cluster, name string) *metav1.Condition {
	c := &clusterv1alpha1.Cluster{}
	if err := hub.Client.Get(ctx, client.ObjectKey{Name: name}, c); err != nil {
		return nil
	}
	return meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ClusterConditionFailover)
}
