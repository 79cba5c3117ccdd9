package existingcluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/flotilla-io/flotilla/internal/hub"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// TestHubRefusesClusterThatRunsWorkloads: `flotilla hub --kubeconfig` on a cluster with Nodes stops with a
// message that says templates would run there and where to go instead; --allow-workloads overrides it. A
// kube-controller-manager that renews its Lease counts as running workloads too; one long gone does not.
func TestHubRefusesClusterThatRunsWorkloads(t *testing.T) {
	ctx := context.Background()
	if err := hub.CheckNoWorkloads(ctx, env.Config); err != nil {
		t.Fatalf("a cluster without Nodes or controller manager is refused: %v", err)
	}

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1"}}
	if _, err := env.Kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Kube.CoreV1().Nodes().Delete(ctx, node.Name, metav1.DeleteOptions{}) })
	refused := testenv.StartProcess(t, "hub-refused", "hub", "--kubeconfig", env.Kubeconfig)
	testenv.Eventually(t, time.Minute, "the hub refuses a cluster with Nodes", func() error {
		if !refused.Exited() {
			return errors.New("still running")
		}
		return nil
	})
	for _, want := range []string{"worker-1", "templates applied on the hub would run there", "charts/flotilla", "--allow-workloads"} {
		if !strings.Contains(refused.Output(), want) {
			t.Errorf("the refusal does not say %q:\n%s", want, refused.Output())
		}
	}
	p := testenv.StartProcess(t, "hub-allowed", "hub", "--kubeconfig", env.Kubeconfig, "--allow-workloads")
	testenv.Eventually(t, 2*time.Minute, "the hub with --allow-workloads is ready", func() error {
		if p.Exited() {
			t.Fatalf("hub exited:\n%s", p.Output())
		}
		if !strings.Contains(p.Output(), "hub ready on the cluster of") {
			return errors.New("not ready yet")
		}
		return nil
	})
	p.Kill()
	if err := env.Kube.CoreV1().Nodes().Delete(ctx, node.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-controller-manager", Namespace: metav1.NamespaceSystem},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("cm-1"), LeaseDurationSeconds: ptr.To(int32(15)),
			RenewTime: &metav1.MicroTime{Time: time.Now()}},
	}
	leases := env.Kube.CoordinationV1().Leases(metav1.NamespaceSystem)
	var err error
	if lease, err = leases.Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = leases.Delete(ctx, lease.Name, metav1.DeleteOptions{}) })
	if err := hub.CheckNoWorkloads(ctx, env.Config); !errors.Is(err, hub.ErrRunsWorkloads) || !strings.Contains(err.Error(), "kube-controller-manager") {
		t.Fatalf("a cluster whose controller manager renews its Lease is not refused: %v", err)
	}
	lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now().Add(-time.Hour)}
	if _, err := leases.Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := hub.CheckNoWorkloads(ctx, env.Config); err != nil {
		t.Fatalf("a controller manager gone for an hour still counts: %v", err)
	}
}
