package scheduler

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

func withRoom(c clusterv1alpha1.Cluster, cpu string) clusterv1alpha1.Cluster {
	c.Status.ResourceSummary = &clusterv1alpha1.ResourceSummary{
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourcePods: resource.MustParse("110")},
	}
	return c
}

func TestSpreadConstraints(t *testing.T) {
	clusters := []clusterv1alpha1.Cluster{cluster("a", "eu"), cluster("b", "eu"), cluster("c", "us")}
	spreadBy := func(s ...policyv1alpha1.SpreadConstraint) *workv1alpha1.ResourceBindingSpec {
		return deployment(2, &policyv1alpha1.Placement{SpreadConstraints: s})
	}
	tests := []struct {
		name    string
		binding *workv1alpha1.ResourceBindingSpec
		want    string
		wantErr string
	}{
		{"one cluster in each of two regions", spreadBy(policyv1alpha1.SpreadConstraint{SpreadByField: "cluster", MaxGroups: 2},
			policyv1alpha1.SpreadConstraint{SpreadByField: "region", MinGroups: 2, MaxGroups: 2}), "a=2,c=2", ""},
		{"at most one cluster", spreadBy(policyv1alpha1.SpreadConstraint{SpreadByField: "cluster", MaxGroups: 1}), "a=2", ""},
		{"neither field nor label spreads by cluster", spreadBy(policyv1alpha1.SpreadConstraint{MaxGroups: 1}), "a=2", ""},
		{"an implicit spread by cluster beside a spread by region", spreadBy(policyv1alpha1.SpreadConstraint{MaxGroups: 2},
			policyv1alpha1.SpreadConstraint{SpreadByField: "region", MinGroups: 2, MaxGroups: 2}), "a=2,c=2", ""},
		{"three regions wanted, two exist", spreadBy(policyv1alpha1.SpreadConstraint{SpreadByField: "cluster"},
			policyv1alpha1.SpreadConstraint{SpreadByField: "region", MinGroups: 3}), "", "spread by region needs at least 3 groups and 2 fit"},
		{"by label", spreadBy(policyv1alpha1.SpreadConstraint{SpreadByField: "cluster", MaxGroups: 3},
			policyv1alpha1.SpreadConstraint{SpreadByLabel: "region", MaxGroups: 1}), "a=2,b=2", ""},
		{"more clusters than allowed groups", spreadBy(policyv1alpha1.SpreadConstraint{SpreadByField: "cluster", MinGroups: 4}), "",
			"spread needs at least 4 clusters and 3 fit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Default().Schedule(tt.binding, clusters, "")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || result(res.Clusters) != tt.want {
				t.Fatalf("got %s (%v), want %s", result(res.Clusters), err, tt.want)
			}
		})
	}
}

func TestDynamicWeightsAndAggregated(t *testing.T) {
	clusters := []clusterv1alpha1.Cluster{withRoom(cluster("a", "eu"), "6"), withRoom(cluster("b", "eu"), "3"), withRoom(cluster("c", "us"), "1")}
	request := &workv1alpha1.ReplicaRequirements{ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}

	dynamic := deployment(5, &policyv1alpha1.Placement{ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
		ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingDivided, ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionWeighted,
		WeightPreference: &policyv1alpha1.ClusterPreferences{DynamicWeight: policyv1alpha1.DynamicWeightByAvailableReplicas}}})
	dynamic.ReplicaRequirements = request
	res, err := Default().Schedule(dynamic, clusters, "")
	if err != nil || result(res.Clusters) != "a=3,b=2" {
		t.Fatalf("dynamic weights 6:3:1 of 5: got %s (%v), want a=3,b=2", result(res.Clusters), err)
	}

	// A static list beside dynamicWeight is not used: dynamic wins, as in Karmada.
	both := dynamic.DeepCopy()
	both.Placement.ReplicaScheduling.WeightPreference.StaticWeightList = []policyv1alpha1.StaticClusterWeight{
		{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"c"}}, Weight: 1}}
	if res, err := Default().Schedule(both, clusters, ""); err != nil || result(res.Clusters) != "a=3,b=2" {
		t.Fatalf("static weights beside dynamic ones: got %s (%v), want a=3,b=2 (dynamic wins)", result(res.Clusters), err)
	}

	aggregated := deployment(5, &policyv1alpha1.Placement{ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
		ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingDivided, ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionAggregated}})
	aggregated.ReplicaRequirements = request
	if res, err := Default().Schedule(aggregated, clusters, ""); err != nil || result(res.Clusters) != "a=5" {
		t.Fatalf("aggregated 5 into room 6: got %s (%v), want a=5", result(res.Clusters), err)
	}
	aggregated.Replicas = 8
	if res, err := Default().Schedule(aggregated, clusters, ""); err != nil || result(res.Clusters) != "a=5,b=3" {
		t.Fatalf("aggregated 8 into rooms 6 and 3: got %s (%v), want a=5,b=3", result(res.Clusters), err)
	}

	// More replicas than the clusters have room for: unschedulable, with the shortfall, whichever capacity
	// division; the controller keeps the current placement (TestDecideNeverEmptiesAPlacement).
	for name, b := range map[string]*workv1alpha1.ResourceBindingSpec{"dynamic": dynamic, "aggregated": aggregated} {
		b.Replicas = 12
		want := "12 replicas divided by capacity do not fit: the 3 feasible clusters have room for 10 (2 short)"
		if res, err := Default().Schedule(b, clusters, ""); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s, 12 replicas into room for 10: got %s (%v), want %q", name, result(res.Clusters), err, want)
		}
		// What the binding already runs counts as room.
		b.Clusters = []workv1alpha1.TargetCluster{{Name: "a", Replicas: 2}}
		if _, err := Default().Schedule(b, clusters, ""); err != nil {
			t.Fatalf("%s, 12 replicas, 2 of them running, into room for 10 more: %v", name, err)
		}
		b.Clusters = nil
	}
}

func TestClusterAffinitiesFallBack(t *testing.T) {
	tainted := corev1.Taint{Key: clusterv1alpha1.TaintClusterNotReady, Effect: corev1.TaintEffectNoSchedule}
	clusters := []clusterv1alpha1.Cluster{cluster("primary-1", "eu", tainted), cluster("backup-1", "us")}
	groups := &policyv1alpha1.Placement{ClusterAffinities: []policyv1alpha1.ClusterAffinityTerm{
		{AffinityName: "primary", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"primary-1"}}},
		{AffinityName: "backup", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"backup-1"}}},
	}}
	res, err := Default().Schedule(deployment(1, groups), clusters, "")
	if err != nil || res.AffinityName != "backup" || result(res.Clusters) != "backup-1=1" {
		t.Fatalf("got %s in %q (%v), want backup-1 in backup", result(res.Clusters), res.AffinityName, err)
	}
	clusters[0].Spec.Taints = nil
	if res, _ := Default().Schedule(deployment(1, groups), clusters, "backup"); res.AffinityName != "backup" {
		t.Fatalf("a binding in the backup group moved back on its own to %q", res.AffinityName)
	}
	if res, _ := Default().Schedule(deployment(1, groups), clusters, ""); res.AffinityName != "primary" {
		t.Fatalf("a fresh binding starts in the first group, not %q", res.AffinityName)
	}
	clusters[1].Spec.Taints = []corev1.Taint{tainted}
	clusters[0].Spec.Taints = []corev1.Taint{tainted}
	if _, err := Default().Schedule(deployment(1, groups), clusters, ""); err == nil || !strings.Contains(err.Error(), "no clusterAffinities group fits: group primary") {
		t.Fatalf("error = %v", err)
	}
}

// A placement by capacity moves only what must move when capacity, the feasible clusters or the replicas
// change.
func TestCapacityPlacementMovesLittle(t *testing.T) {
	request := &workv1alpha1.ReplicaRequirements{ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}
	byCapacity := func(aggregated bool, replicas int32, current string) *workv1alpha1.ResourceBindingSpec {
		rs := &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingDivided,
			ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionWeighted,
			WeightPreference:          &policyv1alpha1.ClusterPreferences{DynamicWeight: policyv1alpha1.DynamicWeightByAvailableReplicas}}
		if aggregated {
			rs = &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingDivided,
				ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionAggregated}
		}
		b := deployment(replicas, &policyv1alpha1.Placement{ReplicaScheduling: rs})
		b.ReplicaRequirements = request
		for _, part := range strings.Split(current, ",") {
			name, n, _ := strings.Cut(part, "=")
			b.Clusters = append(b.Clusters, workv1alpha1.TargetCluster{Name: name, Replicas: int32(n[0] - '0')})
		}
		return b
	}
	// c now has by far the most room; a placement made when it had none stays as it is.
	clusters := []clusterv1alpha1.Cluster{withRoom(cluster("a", "eu"), "2"), withRoom(cluster("b", "eu"), "2"), withRoom(cluster("c", "us"), "60")}
	withoutB := []clusterv1alpha1.Cluster{clusters[0], clusters[2]} // b left the fleet
	tests := []struct {
		name     string
		binding  *workv1alpha1.ResourceBindingSpec
		clusters []clusterv1alpha1.Cluster
		want     string
	}{
		{"capacity changed: nothing moves", byCapacity(false, 5, "a=3,b=2"), clusters, "a=3,b=2"},
		{"scaled up: only the new replicas go by room", byCapacity(false, 8, "a=3,b=2"), clusters, "a=3,b=2,c=3"},
		{"scaled down: each cluster gives up in proportion", byCapacity(false, 2, "a=3,b=2"), clusters, "a=1,b=1"},
		{"a cluster no longer fits: only its replicas move", byCapacity(false, 5, "a=3,b=2"), withoutB, "a=3,c=2"},
		{"aggregated, capacity changed: nothing moves", byCapacity(true, 5, "a=5"), clusters, "a=5"},
		{"aggregated, scaled up: the used cluster first, then the roomiest", byCapacity(true, 8, "a=5"), clusters, "a=7,c=1"},
		{"aggregated, a cluster no longer fits: into the roomiest", byCapacity(true, 4, "a=2,b=2"), withoutB, "a=4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Default().Schedule(tt.binding, tt.clusters, "")
			if err != nil || result(res.Clusters) != tt.want {
				t.Fatalf("got %s (%v), want %s", result(res.Clusters), err, tt.want)
			}
		})
	}
}
