package clusterstatus

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// node is a ready node with allocatable CPU, memory, 110 pods and more resources, and labels.
func node(name, cpu, memory string, labels map[string]string, more corev1.ResourceList, taints ...corev1.Taint) corev1.Node {
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory),
		corev1.ResourcePods: resource.MustParse("110")}
	for k, v := range more {
		alloc[k] = v
	}
	l := map[string]string{corev1.LabelHostname: name}
	for k, v := range labels {
		l[k] = v
	}
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}, Spec: corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{Allocatable: alloc, Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
}

func describe(groups []clusterv1alpha1.NodeGroup) string {
	s := ""
	for _, g := range groups {
		s += fmt.Sprintf("[%v %d taints:", g.Labels, len(g.Taints))
		for _, gr := range g.Grades {
			cpu, gpu := gr.Free[corev1.ResourceCPU], gr.Free["nvidia.com/gpu"]
			pods := gr.Free[corev1.ResourcePods]
			s += fmt.Sprintf(" g%d×%d cpu=%s pods=%s gpu=%s", gr.Grade, gr.Count, cpu.String(), pods.String(), gpu.String())
		}
		s += "]"
	}
	return s
}

// TestNodeGroups: nodes that may take pods are grouped by labels (hostname left out), taints and extended
// resources, and graded by what is free on them; a grade keeps the least free amount of its nodes.
func TestNodeGroups(t *testing.T) {
	gpu := corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4")}
	gpuTaint := corev1.Taint{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}
	notReady := node("down", "32", "128Gi", nil, nil)
	notReady.Status.Conditions[0].Status = corev1.ConditionFalse
	cordoned := node("cordoned", "32", "128Gi", nil, nil)
	cordoned.Spec.Unschedulable = true
	nodes := []corev1.Node{
		node("a1", "32", "128Gi", map[string]string{"pool": "a"}, nil),
		node("a2", "32", "128Gi", map[string]string{"pool": "a"}, nil),
		node("a3", "32", "128Gi", map[string]string{"pool": "a"}, nil),
		node("g1", "16", "64Gi", map[string]string{"pool": "gpu"}, gpu, gpuTaint),
		node("g2", "16", "64Gi", map[string]string{"pool": "gpu"}, gpu, gpuTaint,
			corev1.Taint{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule}), // PreferNoSchedule is not kept
		notReady, cordoned,
	}
	used := map[string]corev1.ResourceList{
		"a2": {corev1.ResourceCPU: resource.MustParse("20"), corev1.ResourcePods: resource.MustParse("10")},
		"a3": {corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourcePods: resource.MustParse("1")},
		"g1": {"nvidia.com/gpu": resource.MustParse("3"), corev1.ResourcePods: resource.MustParse("1")},
	}
	got := describe(nodeGroups(nil, nodes, used))
	// Default grades: 32 CPU and 128Gi free is grade 6 (6 by CPU, 7 by memory: the lower); 30 CPU grade 5;
	// 12 CPU grade 4; 16 CPU and 64Gi grade 5 (5 by CPU, 6 by memory).
	want := "[map[pool:a] 0 taints: g4×1 cpu=12 pods=100 gpu=0 g5×1 cpu=30 pods=109 gpu=0 g6×1 cpu=32 pods=110 gpu=0]" +
		"[map[pool:gpu] 1 taints: g5×2 cpu=16 pods=109 gpu=1]"
	if got != want {
		t.Fatalf("groups\n %s\nwant\n %s", got, want)
	}

	// Custom grades that put every CPU amount in one grade: a grade keeps its nodes' least free amounts.
	one := []clusterv1alpha1.ResourceModel{{Grade: 0, Ranges: []clusterv1alpha1.ResourceModelRange{
		{Name: corev1.ResourceCPU, Min: resource.MustParse("0"), Max: resource.MustParse("1e9")}}}}
	got = describe(nodeGroups(one, nodes[:3], used))
	if want := "[map[pool:a] 0 taints: g0×3 cpu=12 pods=100 gpu=0]"; got != want {
		t.Fatalf("one grade: %s, want %s", got, want)
	}
}

// TestNodeGroupsAreBounded: a member whose nodes all differ in labels reports at most MaxNodeGroups groups;
// the merged one keeps only the labels its nodes share, so no selector matches more than it should.
func TestNodeGroupsAreBounded(t *testing.T) {
	var nodes []corev1.Node
	for i := range 200 {
		nodes = append(nodes, node(fmt.Sprint("n", i), "8", "32Gi", map[string]string{"rack": fmt.Sprint(i), "zone": "z1"}, nil))
	}
	groups := nodeGroups(nil, nodes, nil)
	if len(groups) != clusterv1alpha1.MaxNodeGroups {
		t.Fatalf("%d groups, want %d", len(groups), clusterv1alpha1.MaxNodeGroups)
	}
	var total int32
	merged := 0
	for _, g := range groups {
		for _, gr := range g.Grades {
			total += gr.Count
		}
		if _, ok := g.Labels["rack"]; !ok {
			merged++
			if g.Labels["zone"] != "z1" {
				t.Fatalf("the merged group lost the shared label: %v", g.Labels)
			}
		}
	}
	if total != 200 || merged != 1 {
		t.Fatalf("%d nodes counted in %d merged groups, want 200 in 1", total, merged)
	}
}

// TestResourcesReportModels: Collect's resource pass counts each bound pod's requests on its node.
func TestResourcesReportModels(t *testing.T) {
	n := node("n1", "32", "128Gi", nil, nil)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}, Spec: corev1.PodSpec{NodeName: "n1",
		Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("31")}}}}}}
	_, res, err := resources(context.Background(), fake.NewClientset(pod), []corev1.Node{n}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := describe(res.NodeGroups), "[map[] 0 taints: g1×1 cpu=1 pods=109 gpu=0]"; got != want {
		t.Fatalf("models %s, want %s", got, want)
	}
}

// BenchmarkNodeGroups is what the resource models add to each status report of a member of 1,000 nodes in
// four pools (one with GPUs and a taint), most of them partly used: the agent's extra CPU per heartbeat.
func BenchmarkNodeGroups(b *testing.B) {
	gpu := corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}
	var nodes []corev1.Node
	used := map[string]corev1.ResourceList{}
	for i := range 1000 {
		name := fmt.Sprint("node-", i)
		switch i % 4 {
		case 3:
			nodes = append(nodes, node(name, "64", "512Gi", map[string]string{"pool": "gpu", "zone": fmt.Sprint("z", i%3)}, gpu,
				corev1.Taint{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoSchedule}))
		default:
			nodes = append(nodes, node(name, []string{"8", "16", "32"}[i%4], "64Gi", map[string]string{"pool": fmt.Sprint("p", i%4), "zone": fmt.Sprint("z", i%3)}, nil))
		}
		used[name] = corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(int64(i%7)*1000, resource.DecimalSI),
			corev1.ResourceMemory: resource.MustParse(fmt.Sprint(i%5, "Gi")), corev1.ResourcePods: *resource.NewQuantity(int64(i%10), resource.DecimalSI)}
	}
	b.ReportAllocs()
	for b.Loop() {
		nodeGroups(nil, nodes, used)
	}
}
