package scheduler

import (
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// byCapacity is a binding of replicas divided by dynamic weight, placed as current says.
func byCapacity(replicas int32, after *metav1.Duration, current ...workv1alpha1.TargetCluster) *workv1alpha1.ResourceBindingSpec {
	b := deployment(replicas, &policyv1alpha1.Placement{ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
		ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingDivided, ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionWeighted,
		WeightPreference: &policyv1alpha1.ClusterPreferences{DynamicWeight: policyv1alpha1.DynamicWeightByAvailableReplicas},
		DescheduleAfter:  after}}, current...)
	b.ReplicaRequirements = &workv1alpha1.ReplicaRequirements{ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}
	return b
}

func unschedulable(cluster string, n int32, since time.Time) *workv1alpha1.ResourceBindingStatus {
	return &workv1alpha1.ResourceBindingStatus{AggregatedStatus: []workv1alpha1.AggregatedStatusItem{{ClusterName: cluster,
		Unschedulable: &workv1alpha1.UnschedulableReplicas{Replicas: n, Since: metav1.NewTime(since)}}}}
}

func TestStuckReplicas(t *testing.T) {
	now := time.Now()
	on := []workv1alpha1.TargetCluster{{Name: "a", Replicas: 4}, {Name: "b", Replicas: 2}}
	static := deployment(6, divided(weight("a", 1), weight("b", 1)), on...)
	tests := []struct {
		name     string
		spec     *workv1alpha1.ResourceBindingSpec
		status   *workv1alpha1.ResourceBindingStatus
		def      time.Duration
		want     map[string]int32
		wantWait time.Duration
	}{
		{"stuck past the hub's default", byCapacity(6, nil, on...), unschedulable("a", 2, now.Add(-6*time.Minute)), 5 * time.Minute, map[string]int32{"a": 2}, 0},
		{"not yet: the wait is what is left", byCapacity(6, nil, on...), unschedulable("a", 2, now.Add(-4*time.Minute)), 5 * time.Minute, map[string]int32{}, time.Minute},
		{"the policy's threshold wins", byCapacity(6, &metav1.Duration{Duration: time.Minute}, on...), unschedulable("a", 2, now.Add(-2*time.Minute)), 5 * time.Minute, map[string]int32{"a": 2}, 0},
		{"the policy turns it off", byCapacity(6, &metav1.Duration{}, on...), unschedulable("a", 2, now.Add(-time.Hour)), 5 * time.Minute, nil, 0},
		{"the hub turns it off", byCapacity(6, nil, on...), unschedulable("a", 2, now.Add(-time.Hour)), 0, nil, 0},
		{"never more than the cluster runs", byCapacity(6, nil, on...), unschedulable("b", 5, now.Add(-time.Hour)), 5 * time.Minute, map[string]int32{"b": 2}, 0},
		{"a cluster no longer placed on", byCapacity(6, nil, on...), unschedulable("c", 2, now.Add(-time.Hour)), 5 * time.Minute, map[string]int32{}, 0},
		{"static weights never move", static, unschedulable("a", 2, now.Add(-time.Hour)), 5 * time.Minute, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, wait := stuckReplicas(tt.spec, tt.status, tt.def, now)
			if !maps.Equal(got, tt.want) || (got == nil) != (tt.want == nil) {
				t.Fatalf("stuck %v, want %v", got, tt.want)
			}
			if wait.Round(time.Second) != tt.wantWait {
				t.Fatalf("wait %s, want %s", wait, tt.wantWait)
			}
		})
	}
}

// TestStuckReplicasMove: replicas stuck in a cluster go to the clusters with room, in proportion to it, and
// none back where they were stuck however much room its capacity reports; the others stay. With no room
// anywhere else nothing moves.
func TestStuckReplicasMove(t *testing.T) {
	now := time.Now()
	r := &Controller[*workv1alpha1.ResourceBinding]{Framework: Default()}
	spec := byCapacity(6, nil, workv1alpha1.TargetCluster{Name: "a", Replicas: 4}, workv1alpha1.TargetCluster{Name: "b", Replicas: 2})
	status := unschedulable("a", 2, now.Add(-time.Hour))
	stuck, _ := stuckReplicas(spec, status, DefaultDescheduleAfter, now)

	roomy := []clusterv1alpha1.Cluster{withRoom(cluster("a", "eu"), "40"), withRoom(cluster("b", "eu"), "8"), withRoom(cluster("c", "eu"), "8")}
	res, _, moved, _, err := r.deschedule(r.Framework, spec, status, roomy, nil, nil, stuck, now)
	if err != nil || !moved || result(res.Clusters) != "a=2,b=3,c=1" {
		t.Fatalf("placed %s (%v), want a=2 and the 2 stuck ones on b and c", result(res.Clusters), err)
	}
	if res, _, moved, _, err := r.deschedule(r.Framework, spec, status, roomy, nil, nil, nil, now); err != nil || moved || result(res.Clusters) != "a=4,b=2" {
		t.Fatalf("without stuck replicas placed %s (%v), want it as it is", result(res.Clusters), err)
	}

	full := []clusterv1alpha1.Cluster{withRoom(cluster("a", "eu"), "40"), withRoom(cluster("b", "eu"), "0"), withRoom(cluster("c", "eu"), "0")}
	res, _, moved, blocked, err := r.deschedule(r.Framework, spec, status, full, nil, nil, stuck, now)
	if err != nil || moved || result(res.Clusters) != "a=4,b=2" || !strings.Contains(blocked, "unschedulable in a, but no other cluster has room") {
		t.Fatalf("with no room elsewhere placed %s (moved %v, %v), blocked %q; want the placement as it is, and why", result(res.Clusters), moved, err, blocked)
	}
}
