package scheduler

import (
	"fmt"
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// TestDivisionNeverOverflows: weights and replica counts at and past their bounds (static weights stored
// before admission bounded them, rooms members report in the exabytes, a Duplicated placement of a large
// count turned into a division by capacity) divide exactly the replicas asked for, none negative, in the
// weights' proportions.
func TestDivisionNeverOverflows(t *testing.T) {
	const most = math.MaxInt32
	three := []clusterv1alpha1.Cluster{cluster("a", "eu"), cluster("b", "eu"), cluster("c", "us")}
	reporting := func(pods, cpu string) []clusterv1alpha1.Cluster {
		out := make([]clusterv1alpha1.Cluster, len(three))
		for i, c := range three {
			c.Status.ResourceSummary = &clusterv1alpha1.ResourceSummary{Allocatable: corev1.ResourceList{
				corev1.ResourcePods: resource.MustParse(pods), corev1.ResourceCPU: resource.MustParse(cpu)}}
			out[i] = c
		}
		return out
	}
	byCapacity := func(replicas int32, division policyv1alpha1.ReplicaDivisionPreference, cpu string, current ...workv1alpha1.TargetCluster) *workv1alpha1.ResourceBindingSpec {
		rs := &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingDivided, ReplicaDivisionPreference: division}
		if division == policyv1alpha1.ReplicaDivisionWeighted {
			rs.WeightPreference = &policyv1alpha1.ClusterPreferences{DynamicWeight: policyv1alpha1.DynamicWeightByAvailableReplicas}
		}
		b := deployment(replicas, &policyv1alpha1.Placement{ReplicaScheduling: rs}, current...)
		b.ReplicaRequirements = &workv1alpha1.ReplicaRequirements{ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}
		return b
	}
	tests := []struct {
		name     string
		binding  *workv1alpha1.ResourceBindingSpec
		clusters []clusterv1alpha1.Cluster
		// ratio is each cluster's share in the weights' proportions (nil: only the sum is checked).
		ratio map[string]int64
	}{
		{"static weights at the maximum", deployment(most, divided(weight("a", policyv1alpha1.MaxStaticWeight), weight("b", policyv1alpha1.MaxStaticWeight),
			weight("c", 1))), three, map[string]int64{"a": policyv1alpha1.MaxStaticWeight, "b": policyv1alpha1.MaxStaticWeight, "c": 1}},
		{"static weights stored before the maximum", deployment(most, divided(weight("a", math.MaxInt64), weight("b", math.MaxInt64/2),
			weight("c", math.MaxInt64/4))), three, map[string]int64{"a": 4, "b": 2, "c": 1}},
		{"dynamic weights from rooms past an int32", byCapacity(most, policyv1alpha1.ReplicaDivisionWeighted, "1m"),
			reporting("9223372036854775807", "1e18"), map[string]int64{"a": 1, "b": 1, "c": 1}},
		{"dynamic weights from rooms past milli-units in an int64", byCapacity(most, policyv1alpha1.ReplicaDivisionWeighted, "1"),
			reporting("1e30", "1e30"), map[string]int64{"a": 1, "b": 1, "c": 1}},
		{"aggregated into rooms past an int32", byCapacity(most, policyv1alpha1.ReplicaDivisionAggregated, "1"),
			reporting("9223372036854775807", "1e30"), map[string]int64{"a": 1}},
		{"a Duplicated placement of 2^30 on three clusters, now by capacity", byCapacity(1<<30, policyv1alpha1.ReplicaDivisionWeighted, "1",
			workv1alpha1.TargetCluster{Name: "a", Replicas: 1 << 30}, workv1alpha1.TargetCluster{Name: "b", Replicas: 1 << 30},
			workv1alpha1.TargetCluster{Name: "c", Replicas: 1 << 30}), reporting("1e10", "1e10"), map[string]int64{"a": 1, "b": 1, "c": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Default().Schedule(tt.binding, tt.clusters, "")
			if err != nil {
				t.Fatal(err)
			}
			var sum, weights int64
			for _, w := range tt.ratio {
				weights += w
			}
			got := fmt.Sprint(res.Clusters)
			for _, c := range res.Clusters {
				if c.Replicas < 0 {
					t.Fatalf("a negative count: %s", got)
				}
				sum += int64(c.Replicas)
				// Each share is within one replica of its exact share (the remainder goes one by one).
				if exact := float64(tt.binding.Replicas) * float64(tt.ratio[c.Name]) / float64(weights); math.Abs(float64(c.Replicas)-exact) > 1 {
					t.Errorf("%s runs %d, want %.0f: %s", c.Name, c.Replicas, exact, got)
				}
			}
			if sum != int64(tt.binding.Replicas) || len(res.Clusters) != len(tt.ratio) {
				t.Errorf("%d replicas over %d clusters, want %d over %d: %s", sum, len(res.Clusters), tt.binding.Replicas, len(tt.ratio), got)
			}
		})
	}
}
