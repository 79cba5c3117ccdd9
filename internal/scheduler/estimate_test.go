package scheduler

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// withNodes gives c resource models (one group per entry) and the summary their nodes add up to.
func withNodes(c clusterv1alpha1.Cluster, groups ...clusterv1alpha1.NodeGroup) clusterv1alpha1.Cluster {
	sum := corev1.ResourceList{}
	for _, g := range groups {
		for _, gr := range g.Grades {
			for name, q := range gr.Free {
				total := sum[name]
				for range gr.Count {
					total.Add(q)
				}
				sum[name] = total
			}
		}
	}
	c.Status.ResourceSummary = &clusterv1alpha1.ResourceSummary{Allocatable: sum, NodeGroups: groups}
	return c
}

// nodes is a group of count nodes with cpu CPUs and 110 pod slots free each, and more.
func nodes(count int32, cpu string, labels map[string]string, more corev1.ResourceList, taints ...corev1.Taint) clusterv1alpha1.NodeGroup {
	free := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods: resource.MustParse("110")}
	for k, v := range more {
		free[k] = v
	}
	return clusterv1alpha1.NodeGroup{Labels: labels, Taints: taints, Grades: []clusterv1alpha1.NodeGrade{{Grade: 6, Count: count, Free: free}}}
}

func requesting(requests corev1.ResourceList, claim *workv1alpha1.NodeClaim) *workv1alpha1.ReplicaRequirements {
	return &workv1alpha1.ReplicaRequirements{ResourceRequest: requests, NodeClaim: claim}
}

func cpu(q string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}
}

// TestModelReplicas: replicas are counted node by node, on the node groups the replica's claim lets it on.
func TestModelReplicas(t *testing.T) {
	gpuTaint := corev1.Taint{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoSchedule}
	fleet := withNodes(cluster("m", "eu"),
		nodes(3, "32", map[string]string{"pool": "general", "zone": "a"}, nil),
		nodes(2, "64", map[string]string{"pool": "big", "zone": "b"}, nil),
		nodes(4, "16", map[string]string{"pool": "gpu", "zone": "a"}, corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2")}, gpuTaint),
	)
	tolerateGPU := []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	affinity := func(op corev1.NodeSelectorOperator, key string, values ...string) *corev1.NodeSelector {
		return &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}}}}
	}
	for _, tt := range []struct {
		name string
		req  *workv1alpha1.ReplicaRequirements
		want int64
	}{
		{"33 CPU fits only the 64-CPU nodes, one each", requesting(cpu("33"), nil), 2},
		{"40 CPU, the same", requesting(cpu("40"), nil), 2},
		{"65 CPU fits no node though 288 are free", requesting(cpu("65"), nil), 0},
		{"10 CPU: 3 on each 32, 6 on each 64; the GPU nodes are tainted", requesting(cpu("10"), nil), 3*3 + 2*6},
		{"10 CPU tolerating the GPU taint: 1 on each 16 too", requesting(cpu("10"), &workv1alpha1.NodeClaim{Tolerations: tolerateGPU}), 3*3 + 2*6 + 4},
		{"a GPU each, tolerated: 2 per GPU node", requesting(corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}, &workv1alpha1.NodeClaim{Tolerations: tolerateGPU}), 8},
		{"a GPU each, not tolerated", requesting(corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}, nil), 0},
		{"3 GPUs fit no node", requesting(corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("3")}, &workv1alpha1.NodeClaim{Tolerations: tolerateGPU}), 0},
		{"selector pool=general", requesting(cpu("10"), &workv1alpha1.NodeClaim{NodeSelector: map[string]string{"pool": "general"}}), 9},
		{"selector on the hostname is not checked", requesting(cpu("10"), &workv1alpha1.NodeClaim{NodeSelector: map[string]string{"pool": "general", corev1.LabelHostname: "n1"}}), 9},
		{"affinity zone in (b)", requesting(cpu("10"), &workv1alpha1.NodeClaim{HardNodeAffinity: affinity(corev1.NodeSelectorOpIn, "zone", "b")}), 12},
		{"affinity zone notin (b), GPU tolerated", requesting(cpu("10"), &workv1alpha1.NodeClaim{HardNodeAffinity: affinity(corev1.NodeSelectorOpNotIn, "zone", "b"), Tolerations: tolerateGPU}), 9 + 4},
		{"affinity on a label no node has", requesting(cpu("1"), &workv1alpha1.NodeClaim{HardNodeAffinity: affinity(corev1.NodeSelectorOpExists, "ssd")}), 0},
		{"no requests: pod slots", nil, 9*110 - 4*110},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := deployment(1, nil)
			b.ReplicaRequirements = tt.req
			if got, ok := modelReplicas(b, &fleet); !ok || got != tt.want {
				t.Fatalf("%d replicas (models %v), want %d", got, ok, tt.want)
			}
		})
	}
	if _, ok := modelReplicas(deployment(1, nil), &clusterv1alpha1.Cluster{}); ok {
		t.Fatal("a cluster without models was estimated from models")
	}
}

func aggregatedBy(req *workv1alpha1.ReplicaRequirements, replicas int32, current ...workv1alpha1.TargetCluster) *workv1alpha1.ResourceBindingSpec {
	b := deployment(replicas, &policyv1alpha1.Placement{ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
		ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingDivided, ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionAggregated}}, current...)
	b.ReplicaRequirements = req
	return b
}

// TestNodeFit: 2 replicas × 33 CPU on members whose nodes have 32 CPUs each go nowhere, though each member
// has 96 CPUs free in sum, and the reason names the request; a member with 64-CPU nodes takes them.
func TestNodeFit(t *testing.T) {
	small := func(name string) clusterv1alpha1.Cluster {
		return withNodes(cluster(name, "eu"), nodes(3, "32", nil, nil))
	}
	b := aggregatedBy(requesting(cpu("33"), nil), 2)
	res, err := Default().Schedule(b, []clusterv1alpha1.Cluster{small("member1"), small("member2")}, "")
	want := "0/2 clusters fit: 2 have no node that fits 33 CPU (member1, member2)"
	if err == nil || err.Error() != want {
		t.Fatalf("got %s (%v), want %q", result(res.Clusters), err, want)
	}
	if len(res.Verdicts) != 2 || res.Verdicts[0].Plugin != PluginNodeFit {
		t.Fatalf("verdicts %+v, want NodeFit for each member", res.Verdicts)
	}

	big := withNodes(cluster("member3", "eu"), nodes(2, "64", nil, nil))
	res, err = Default().Schedule(b, []clusterv1alpha1.Cluster{small("member1"), small("member2"), big}, "")
	if err != nil || result(res.Clusters) != "member3=2" {
		t.Fatalf("got %s (%v), want member3=2", result(res.Clusters), err)
	}

	// Dynamic weights the same way.
	dynamic := b.DeepCopy()
	dynamic.Placement.ReplicaScheduling.ReplicaDivisionPreference = policyv1alpha1.ReplicaDivisionWeighted
	dynamic.Placement.ReplicaScheduling.WeightPreference = &policyv1alpha1.ClusterPreferences{DynamicWeight: policyv1alpha1.DynamicWeightByAvailableReplicas}
	if res, err = Default().Schedule(dynamic, []clusterv1alpha1.Cluster{small("member1"), big}, ""); err != nil || result(res.Clusters) != "member3=2" {
		t.Fatalf("dynamic: got %s (%v), want member3=2", result(res.Clusters), err)
	}

	// A cluster the binding runs on stays: its own replicas hold the room they use.
	full := withNodes(cluster("member3", "eu"), nodes(2, "31", nil, nil))
	running := aggregatedBy(requesting(cpu("33"), nil), 2, workv1alpha1.TargetCluster{Name: "member3", Replicas: 2})
	if res, err = Default().Schedule(running, []clusterv1alpha1.Cluster{small("member1"), full}, ""); err != nil || result(res.Clusters) != "member3=2" {
		t.Fatalf("running: got %s (%v), want member3=2", result(res.Clusters), err)
	}

	// Duplicated and static weights are not filtered by capacity.
	if res, err = Default().Schedule(deployment(2, nil), []clusterv1alpha1.Cluster{small("member1")}, ""); err != nil || len(res.Clusters) != 1 {
		t.Fatalf("duplicated: got %s (%v), want member1", result(res.Clusters), err)
	}
}

// TestNoFitReason: the reason says what no node has.
func TestNoFitReason(t *testing.T) {
	gpuTaint := corev1.Taint{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}
	groups := []clusterv1alpha1.NodeGroup{
		nodes(2, "32", map[string]string{"pool": "a"}, nil),
		nodes(1, "8", map[string]string{"pool": "gpu"}, corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}, gpuTaint),
	}
	full := nodes(1, "32", map[string]string{"pool": "full"}, nil)
	full.Grades[0].Free[corev1.ResourcePods] = resource.MustParse("0")
	for _, tt := range []struct {
		req    *workv1alpha1.ReplicaRequirements
		groups []clusterv1alpha1.NodeGroup
		want   string
	}{
		{requesting(cpu("40"), nil), groups, "have no node that fits 40 CPU"},
		{requesting(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("40"), corev1.ResourceMemory: resource.MustParse("1Ti")}, nil), groups,
			"have no node that fits 40 CPU and 1Ti memory"},
		{requesting(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16"), "nvidia.com/gpu": resource.MustParse("1")},
			&workv1alpha1.NodeClaim{Tolerations: []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}}), groups,
			"have no node that fits 16 CPU, 1 nvidia.com/gpu together"},
		{requesting(cpu("1"), &workv1alpha1.NodeClaim{NodeSelector: map[string]string{"pool": "gpu"}}), groups,
			"have no node the replica's node selector, affinity and tolerations let it on"},
		{requesting(cpu("1"), nil), []clusterv1alpha1.NodeGroup{full}, "have no node with room for another pod"},
	} {
		if got := noFitReason(tt.req, tt.groups); got != tt.want {
			t.Errorf("%v: %q, want %q", tt.req.ResourceRequest, got, tt.want)
		}
	}
}

// BenchmarkEstimate schedules one Aggregated binding of 100 replicas × 3 CPU against fleets of growing size
// whose clusters report resource models of three node groups each: every cluster is estimated node group by
// node group, several times over (ranking, division, the capacity check).
func BenchmarkEstimate(b *testing.B) {
	for _, n := range []int{100, 1000} {
		clusters := make([]clusterv1alpha1.Cluster, n)
		for i := range clusters {
			clusters[i] = withNodes(cluster(fmt.Sprintf("c%05d", i), []string{"eu", "us"}[i%2]),
				nodes(int32(1+i%5), "32", map[string]string{"pool": "general"}, nil),
				nodes(2, "64", map[string]string{"pool": "big"}, nil),
				nodes(1, "16", map[string]string{"pool": "gpu"}, corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2")},
					corev1.Taint{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}))
		}
		for _, division := range []string{"aggregated", "dynamic"} {
			spec := aggregatedBy(requesting(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3"), corev1.ResourceMemory: resource.MustParse("4Gi")},
				&workv1alpha1.NodeClaim{NodeSelector: map[string]string{"pool": "general"}}), 100)
			if division == "dynamic" {
				spec.Placement.ReplicaScheduling.ReplicaDivisionPreference = policyv1alpha1.ReplicaDivisionWeighted
				spec.Placement.ReplicaScheduling.WeightPreference = &policyv1alpha1.ClusterPreferences{DynamicWeight: policyv1alpha1.DynamicWeightByAvailableReplicas}
			}
			f := Default()
			b.Run(fmt.Sprintf("%s/clusters=%d", division, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := f.Schedule(spec, clusters, ""); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
