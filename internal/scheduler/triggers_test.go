package scheduler

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// TestClusterChangeOf: only a Cluster change a filter, score or division reads can move a placement; the
// facts every heartbeat or status report refreshes move none.
func TestClusterChangeOf(t *testing.T) {
	summary := func(cpu string) *clusterv1alpha1.ResourceSummary {
		return &clusterv1alpha1.ResourceSummary{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}
	}
	base := func() *clusterv1alpha1.Cluster {
		c := cluster("a", "eu")
		c.Spec.Zones = []string{"eu-1"}
		c.Status.Conditions = append(c.Status.Conditions, metav1.Condition{Type: clusterv1alpha1.ClusterConditionReady, Status: metav1.ConditionTrue,
			Reason: "Healthy", LastTransitionTime: metav1.NewTime(time.Unix(1000, 0))})
		c.Status.KubernetesVersion = "v1.37.1"
		c.Status.NodeSummary = &clusterv1alpha1.NodeSummary{TotalNum: 3, ReadyNum: 3}
		c.Status.ResourceSummary = summary("8")
		c.Status.Health = &clusterv1alpha1.HealthEndpoints{Livez: "ok", Readyz: "ok"}
		return &c
	}
	tests := []struct {
		name   string
		change func(c *clusterv1alpha1.Cluster)
		want   clusterChange
	}{
		{"resource version only (a write that changed nothing)", func(c *clusterv1alpha1.Cluster) { c.ResourceVersion = "2" }, noChange},
		{"heartbeat: Ready condition probed again", func(c *clusterv1alpha1.Cluster) {
			c.Status.Conditions[1].LastTransitionTime = metav1.NewTime(time.Unix(2000, 0))
			c.Status.Conditions[1].Message = "probed at 12:00:10"
		}, noChange},
		{"Ready turns Unknown (the health monitor taints for it)", func(c *clusterv1alpha1.Cluster) {
			c.Status.Conditions[1].Status = metav1.ConditionUnknown
		}, noChange},
		{"kubernetes version", func(c *clusterv1alpha1.Cluster) { c.Status.KubernetesVersion = "v1.37.2" }, noChange},
		{"agent version and platform", func(c *clusterv1alpha1.Cluster) {
			c.Status.AgentVersion, c.Status.Platform = "v0.2.0", "linux/arm64"
		}, noChange},
		{"node count, same allocatable", func(c *clusterv1alpha1.Cluster) { c.Status.NodeSummary.ReadyNum = 2 }, noChange},
		{"health endpoints", func(c *clusterv1alpha1.Cluster) { c.Status.Health.Readyz = "[-]etcd failed" }, noChange},
		{"endpoint and identity", func(c *clusterv1alpha1.Cluster) { c.Spec.APIEndpoint, c.Spec.ID = "https://b:6443", "other" }, noChange},
		{"annotations", func(c *clusterv1alpha1.Cluster) { c.Annotations = map[string]string{"note": "x"} }, noChange},
		{"same quantity written differently", func(c *clusterv1alpha1.Cluster) { c.Status.ResourceSummary = summary("8000m") }, noChange},

		{"label added", func(c *clusterv1alpha1.Cluster) { c.Labels["tier"] = "gold" }, placementChange},
		{"label changed", func(c *clusterv1alpha1.Cluster) { c.Labels["region"] = "us" }, placementChange},
		{"taint added", func(c *clusterv1alpha1.Cluster) {
			c.Spec.Taints = []corev1.Taint{{Key: "maintenance", Effect: corev1.TaintEffectNoSchedule}}
		}, placementChange},
		{"provider", func(c *clusterv1alpha1.Cluster) { c.Spec.Provider = "aws" }, placementChange},
		{"region", func(c *clusterv1alpha1.Cluster) { c.Spec.Region = "us" }, placementChange},
		{"zones", func(c *clusterv1alpha1.Cluster) { c.Spec.Zones = []string{"eu-1", "eu-2"} }, placementChange},
		{"API served", func(c *clusterv1alpha1.Cluster) {
			c.Status.APIEnablements = append(c.Status.APIEnablements, clusterv1alpha1.APIEnablement{GroupVersion: "batch/v1",
				Resources: []clusterv1alpha1.APIResource{{Name: "jobs", Kind: "Job"}}})
		}, placementChange},
		{"API list turns incomplete", func(c *clusterv1alpha1.Cluster) { c.Status.Conditions[0].Status = metav1.ConditionFalse }, placementChange},
		{"deletion starts", func(c *clusterv1alpha1.Cluster) { c.DeletionTimestamp = &metav1.Time{Time: time.Now()} }, placementChange},

		{"allocatable", func(c *clusterv1alpha1.Cluster) { c.Status.ResourceSummary = summary("6") }, capacityChange},
		{"allocated", func(c *clusterv1alpha1.Cluster) {
			c.Status.ResourceSummary.Allocated = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
		}, capacityChange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old, updated := base(), base()
			tt.change(updated)
			if got := changeOf(old, updated); got != tt.want {
				t.Fatalf("changeOf = %d, want %d", got, tt.want)
			}
		})
	}
}

// TestPlacedByCapacity: a capacity change reschedules only the bindings whose division reads the clusters'
// room.
func TestPlacedByCapacity(t *testing.T) {
	dividedBy := func(p policyv1alpha1.ReplicaSchedulingStrategy) *policyv1alpha1.Placement {
		p.ReplicaSchedulingType = policyv1alpha1.ReplicaSchedulingDivided
		return &policyv1alpha1.Placement{ReplicaScheduling: &p}
	}
	dynamic := dividedBy(policyv1alpha1.ReplicaSchedulingStrategy{WeightPreference: &policyv1alpha1.ClusterPreferences{
		DynamicWeight: policyv1alpha1.DynamicWeightByAvailableReplicas}})
	aggregated := dividedBy(policyv1alpha1.ReplicaSchedulingStrategy{ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionAggregated})
	for _, tt := range []struct {
		name string
		spec *workv1alpha1.ResourceBindingSpec
		want bool
	}{
		{"duplicated", deployment(3, nil), false},
		{"divided by static weight", deployment(3, divided(weight("a", 1))), false},
		{"divided by dynamic weight", deployment(3, dynamic), true},
		{"aggregated", deployment(3, aggregated), true},
		{"aggregated, no replicas", deployment(0, aggregated), false},
	} {
		if got := placedByCapacity(tt.spec); got != tt.want {
			t.Errorf("%s: placedByCapacity = %v, want %v", tt.name, got, tt.want)
		}
	}

	// Of a capacity change, only what changes a binding's room for more replicas there counts.
	withCPU := func(allocatable, allocated string) *clusterv1alpha1.Cluster {
		c := cluster("a", "eu")
		c.Status.ResourceSummary = &clusterv1alpha1.ResourceSummary{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(allocatable)},
			Allocated:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(allocated)}}
		return &c
	}
	wholeCPUs := deployment(3, dynamic)
	wholeCPUs.ReplicaRequirements = &workv1alpha1.ReplicaRequirements{ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}
	for _, tt := range []struct {
		name         string
		spec         *workv1alpha1.ResourceBindingSpec
		old, updated *clusterv1alpha1.Cluster
		want         bool
	}{
		{"room for 4 stays room for 4", wholeCPUs, withCPU("9", "0"), withCPU("9", "500m"), false},
		{"room for 4 becomes room for 3", wholeCPUs, withCPU("9", "0"), withCPU("9", "2"), true},
		{"not placed by capacity", deployment(3, nil), withCPU("8", "0"), withCPU("2", "2"), false},
	} {
		if got := roomChanged(tt.spec, tt.old, tt.updated); got != tt.want {
			t.Errorf("%s: roomChanged = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestBindingChanged: the scheduler is woken by a binding's policy-derived spec and by health that can
// finish an eviction, not by its own placement or status writes.
func TestBindingChanged(t *testing.T) {
	healthy := func(status metav1.ConditionStatus, generation int64) []metav1.Condition {
		return []metav1.Condition{{Type: workv1alpha1.ConditionHealthy, Status: status, ObservedGeneration: generation}}
	}
	task := workv1alpha1.GracefulEvictionTask{FromCluster: "a", Reason: "TaintUntolerated", Producer: "scheduler"}
	tests := []struct {
		name string
		edit func(b *workv1alpha1.ResourceBinding)
		want bool
	}{
		{"placement of the policy", func(b *workv1alpha1.ResourceBinding) {
			b.Spec.Placement = &policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"b"}}}
		}, true},
		{"replicas", func(b *workv1alpha1.ResourceBinding) { b.Spec.Replicas = 5 }, true},
		{"reschedule asked", func(b *workv1alpha1.ResourceBinding) { b.Spec.RescheduleTriggeredAt = &metav1.Time{Time: time.Now()} }, true},
		{"its own placement", func(b *workv1alpha1.ResourceBinding) {
			b.Generation++
			b.Spec.Clusters = []workv1alpha1.TargetCluster{{Name: "b", Replicas: 2}}
			b.Spec.GracefulEvictionTasks = []workv1alpha1.GracefulEvictionTask{task}
		}, false},
		{"its own status", func(b *workv1alpha1.ResourceBinding) {
			b.Status.Conditions = []metav1.Condition{{Type: workv1alpha1.ConditionScheduled, Status: metav1.ConditionTrue}}
			b.Status.SchedulerObservedGeneration = 2
		}, false},
		{"healthy, nothing being left", func(b *workv1alpha1.ResourceBinding) { b.Status.Conditions = healthy(metav1.ConditionTrue, 1) }, false},
		{"aggregated status", func(b *workv1alpha1.ResourceBinding) {
			b.Status.AggregatedStatus = []workv1alpha1.AggregatedStatusItem{{ClusterName: "b", Applied: true}}
		}, false},
		{"its own failover records", func(b *workv1alpha1.ResourceBinding) {
			b.Generation++
			b.Spec.FailoverRecords = []workv1alpha1.FailoverRecord{{FromCluster: "a", Reason: ReasonApplicationFailure}}
		}, false},
		{"placed by a ClusterPropagationPolicy now (not confined any more)", func(b *workv1alpha1.ResourceBinding) {
			b.Labels = map[string]string{policyv1alpha1.LabelClusterPropagationPolicy: "admin"}
		}, true},
		{"another label", func(b *workv1alpha1.ResourceBinding) { b.Labels = map[string]string{"team": "a"} }, false},
		{"health without application failover", func(b *workv1alpha1.ResourceBinding) {
			b.Status.AggregatedStatus = []workv1alpha1.AggregatedStatusItem{health("b", workv1alpha1.ResourceUnhealthy, time.Now())}
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Generation: 1}, Spec: *deployment(2, nil)}
			updated := old.DeepCopy()
			tt.edit(updated)
			if got := bindingChanged.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: updated}); got != tt.want {
				t.Fatalf("bindingChanged = %v, want %v", got, tt.want)
			}
		})
	}
	// With application failover, a cluster's health (or since when) wakes the scheduler; its status numbers
	// do not.
	failing := &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Generation: 1}, Spec: *appFailover(10, "a", "b")}
	failing.Status.AggregatedStatus = []workv1alpha1.AggregatedStatusItem{health("b", workv1alpha1.ResourceHealthy, time.Unix(1000, 0))}
	for name, tt := range map[string]struct {
		item workv1alpha1.AggregatedStatusItem
		want bool
	}{
		"turned unhealthy":   {health("b", workv1alpha1.ResourceUnhealthy, time.Unix(2000, 0)), true},
		"same health, later": {health("b", workv1alpha1.ResourceHealthy, time.Unix(3000, 0)), true},
		"status numbers":     {workv1alpha1.AggregatedStatusItem{ClusterName: "b", Health: workv1alpha1.ResourceHealthy, Applied: true, HealthTransitionTime: failing.Status.AggregatedStatus[0].HealthTransitionTime}, false},
	} {
		updated := failing.DeepCopy()
		updated.Status.AggregatedStatus = []workv1alpha1.AggregatedStatusItem{tt.item}
		if got := bindingChanged.Update(event.UpdateEvent{ObjectOld: failing, ObjectNew: updated}); got != tt.want {
			t.Errorf("%s with application failover: bindingChanged = %v, want %v", name, got, tt.want)
		}
	}
	// While a cluster is being left, health that can finish the eviction wakes the scheduler.
	leaving := &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Spec: *deployment(2, nil)}
	leaving.Spec.GracefulEvictionTasks = []workv1alpha1.GracefulEvictionTask{task}
	leaving.Status.Conditions = healthy(metav1.ConditionFalse, 2)
	for name, conditions := range map[string][]metav1.Condition{
		"healthy":                healthy(metav1.ConditionTrue, 2),
		"observed a new version": healthy(metav1.ConditionFalse, 3),
	} {
		updated := leaving.DeepCopy()
		updated.Status.Conditions = conditions
		if !bindingChanged.Update(event.UpdateEvent{ObjectOld: leaving, ObjectNew: updated}) {
			t.Errorf("%s while a cluster is being left: the scheduler is not woken", name)
		}
	}
}
