package scheduler

import (
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

func TestFresh(t *testing.T) {
	at := func(s int) *metav1.Time { return &metav1.Time{Time: time.Date(2026, 1, 1, 0, 0, s, 0, time.UTC)} }
	tests := []struct {
		name                      string
		trigger, placed, answered *metav1.Time
		want                      bool
	}{
		{"no trigger", nil, at(10), nil, false},
		{"no trigger, never placed", nil, nil, nil, false},
		{"trigger, never placed", at(10), nil, nil, true},
		{"trigger after the last placement", at(11), at(10), nil, true},
		{"trigger before the last placement: already done", at(9), at(10), nil, false},
		// Placed in the same second: maybe just before the trigger (a cluster came back as the Rebalancer
		// was created), so the trigger may be unanswered.
		{"trigger in the same second as the last placement", at(10), at(10), nil, true},
		{"trigger answered", at(10), at(10), at(10), false},
		{"trigger answered, placed since", at(10), at(30), at(10), false},
		{"a new trigger after an answered one", at(20), at(10), at(10), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := &workv1alpha1.ResourceBindingSpec{RescheduleTriggeredAt: tt.trigger}
			status := &workv1alpha1.ResourceBindingStatus{LastScheduledTime: tt.placed, RescheduleTriggerObserved: tt.answered}
			if got := Fresh(spec, status); got != tt.want {
				t.Fatalf("Fresh = %v, want %v", got, tt.want)
			}
		})
	}
}

// A fresh pass (a Rebalancer's trigger) places the binding as if it ran nowhere yet; without the trigger
// the same binding stays where it is.
func TestScheduleBindingFresh(t *testing.T) {
	request := &workv1alpha1.ReplicaRequirements{ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}
	placedOn := func(b *workv1alpha1.ResourceBindingSpec, current string) *workv1alpha1.ResourceBindingSpec {
		for _, part := range strings.Split(current, ",") {
			name, n, _ := strings.Cut(part, "=")
			b.Clusters = append(b.Clusters, workv1alpha1.TargetCluster{Name: name, Replicas: int32(n[0] - '0')})
		}
		return b
	}
	divided := func(replicas int32, rs policyv1alpha1.ReplicaSchedulingStrategy, current string) *workv1alpha1.ResourceBindingSpec {
		rs.ReplicaSchedulingType = policyv1alpha1.ReplicaSchedulingDivided
		b := deployment(replicas, &policyv1alpha1.Placement{ReplicaScheduling: &rs})
		b.ReplicaRequirements = request
		return placedOn(b, current)
	}
	groups := &policyv1alpha1.Placement{ClusterAffinities: []policyv1alpha1.ClusterAffinityTerm{
		{AffinityName: "primary", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"a"}}},
		{AffinityName: "backup", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"c"}}},
	}}
	dynamic := policyv1alpha1.ReplicaSchedulingStrategy{ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionWeighted,
		WeightPreference: &policyv1alpha1.ClusterPreferences{DynamicWeight: policyv1alpha1.DynamicWeightByAvailableReplicas}}
	aggregated := policyv1alpha1.ReplicaSchedulingStrategy{ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionAggregated}
	equal := policyv1alpha1.ReplicaSchedulingStrategy{ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionWeighted}
	spread := &policyv1alpha1.Placement{SpreadConstraints: []policyv1alpha1.SpreadConstraint{{SpreadByField: "cluster", MaxGroups: 1}}}

	// c has by far the most room; a and b little.
	clusters := []clusterv1alpha1.Cluster{withRoom(cluster("a", "eu"), "2"), withRoom(cluster("b", "eu"), "2"), withRoom(cluster("c", "us"), "60")}
	tests := []struct {
		name             string
		binding          *workv1alpha1.ResourceBindingSpec
		observed         string
		sticky, fresh    string
		stickyAff, frAff string
	}{
		{"affinity groups: back to the first group", placedOn(deployment(2, groups), "c=2"), "backup", "c=2", "a=2", "backup", "primary"},
		{"equal weights: the remainder does not stay where it ran", divided(4, equal, "a=1,b=1,c=2"), "", "a=1,b=1,c=2", "a=2,b=1,c=1", "", ""},
		{"dynamic weights: divided by room from scratch", divided(6, dynamic, "a=3,b=3"), "", "a=3,b=3", "c=6", "", ""},
		{"aggregated: into the roomiest from scratch", divided(4, aggregated, "a=2,b=2"), "", "a=2,b=2", "c=4", "", ""},
		{"one cluster at most: the best-ranked, not the one in use", placedOn(deployment(2, spread), "b=2"), "", "b=2", "a=2", "", ""},
	}
	trigger := metav1.NewTime(time.Now())
	before := metav1.NewTime(trigger.Add(-time.Minute))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, fresh := range []bool{false, true} {
				spec := tt.binding.DeepCopy()
				status := &workv1alpha1.ResourceBindingStatus{SchedulerObservedAffinityName: tt.observed, LastScheduledTime: &before}
				want, wantAff := tt.sticky, tt.stickyAff
				if fresh {
					spec.RescheduleTriggeredAt = &trigger
					want, wantAff = tt.fresh, tt.frAff
				}
				res, err := Default().ScheduleBinding(spec, status, clusters)
				if err != nil || result(res.Clusters) != want || res.AffinityName != wantAff {
					t.Errorf("fresh=%v: got %s in %q (%v), want %s in %q", fresh, result(res.Clusters), res.AffinityName, err, want, wantAff)
				}
			}
		})
	}
}

// A fresh pass drops no cluster the binding runs on for a doubt that only keeps new placements away.
func TestScheduleBindingFreshKeepsFilters(t *testing.T) {
	notReady := corev1.Taint{Key: clusterv1alpha1.TaintClusterNotReady, Effect: corev1.TaintEffectNoSchedule}
	clusters := []clusterv1alpha1.Cluster{cluster("a", "eu", notReady), withoutDeployments(cluster("b", "eu"), "incomplete"), cluster("c", "us")}
	trigger := metav1.Now()
	spec := deployment(2, nil, workv1alpha1.TargetCluster{Name: "a", Replicas: 2}, workv1alpha1.TargetCluster{Name: "b", Replicas: 2})
	spec.RescheduleTriggeredAt = &trigger
	res, err := Default().ScheduleBinding(spec, &workv1alpha1.ResourceBindingStatus{}, clusters)
	if err != nil || result(res.Clusters) != "a=2,b=2,c=2" {
		t.Fatalf("got %s (%v), want a=2,b=2,c=2", result(res.Clusters), err)
	}
}
