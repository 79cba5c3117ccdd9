package integration

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/clusterstatus"
)

// TestResourceModelsAreWrittenOnlyOnChange: the agent's reporter puts the member's free capacity per node
// into the Cluster's resource models; a member at rest costs no status write however many heartbeats pass
// (two minutes' worth here), and a pod bound to a node is one write that shows its requests taken off. The
// reporter's status writes are counted at its client (the hub's health monitor writes the Cluster too).
func TestResourceModelsAreWrittenOnlyOnChange(t *testing.T) {
	ctx := context.Background()
	agent, _ := join(t, env, "models", "id-models")
	member := kubernetes.NewForConfigOrDie(env.Config) // the member is this test's control plane
	for _, name := range []string{"models-node-0", "models-node-1"} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pool": "models-test", corev1.LabelHostname: name}}}
		node, err := member.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = member.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("128Gi"),
			corev1.ResourcePods: resource.MustParse("110")}
		node.Status = corev1.NodeStatus{Capacity: capacity, Allocatable: capacity,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}
		if _, err := member.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	writes := 0
	r := &clusterstatus.Reporter{Hub: countingStatus{agent, &writes}, Member: member, Cluster: "models", Holder: "agent-models", AgentVersion: "test"}
	cluster := &clusterv1alpha1.Cluster{}
	// ours reports once and says the grades of the test's node group.
	ours := func() string {
		t.Helper()
		if err := r.ReportOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "models"}, cluster); err != nil {
			t.Fatal(err)
		}
		for _, g := range cluster.Status.ResourceSummary.NodeGroups {
			if g.Labels["pool"] == "models-test" {
				s := ""
				for _, gr := range g.Grades {
					cpu := gr.Free[corev1.ResourceCPU]
					s += fmt.Sprintf("[grade %d: %d nodes, %s CPU]", gr.Grade, gr.Count, cpu.String())
				}
				return s
			}
		}
		t.Fatalf("no node group of the test's nodes in %+v", cluster.Status.ResourceSummary)
		return ""
	}
	if got, want := ours(), "[grade 6: 2 nodes, 32 CPU]"; got != want || writes != 1 {
		t.Fatalf("models %s in %d writes, want %s in 1", got, writes, want)
	}
	for range 12 { // two minutes of heartbeats with nothing changed
		ours()
	}
	if writes != 1 {
		t.Fatalf("%d status writes at rest, want none", writes-1)
	}

	ns := "models-test"
	if _, err := member.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = member.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	if _, err := member.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "big"}, Spec: corev1.PodSpec{NodeName: "models-node-1",
		Containers: []corev1.Container{{Name: "app", Image: "nginx", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("20")}}}}}}
	if _, err := member.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, want := ours(), "[grade 4: 1 nodes, 12 CPU][grade 6: 1 nodes, 32 CPU]"; got != want || writes != 2 {
		t.Fatalf("models %s after %d writes, want %s in one more write", got, writes, want)
	}
}

// countingStatus is a client that counts its status writes.
type countingStatus struct {
	client.Client
	writes *int
}

func (c countingStatus) Status() client.SubResourceWriter {
	return statusWrites{c.Client.Status(), c.writes}
}

type statusWrites struct {
	client.SubResourceWriter
	writes *int
}

func (s statusWrites) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	*s.writes++
	return s.SubResourceWriter.Apply(ctx, obj, opts...)
}

func (s statusWrites) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	*s.writes++
	return s.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

func (s statusWrites) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	*s.writes++
	return s.SubResourceWriter.Update(ctx, obj, opts...)
}
