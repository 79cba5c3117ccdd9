// Package e2e runs scenarios against the built flotilla binary: hubs and member clusters as real processes.
package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flotilla-io/flotilla/internal/testenv"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// waitAvailable waits until the Deployment has all its replicas available and every pod Running with an IP.
func waitAvailable(t *testing.T, c *framework.Cluster, name string, replicas int32) {
	t.Helper()
	ctx := context.Background()
	testenv.Eventually(t, 2*time.Minute, fmt.Sprintf("%s/%s %d/%d available", c.Name, name, replicas, replicas), func() error {
		d, err := c.Kube.AppsV1().Deployments(metav1.NamespaceDefault).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.Status.AvailableReplicas != replicas || d.Status.ReadyReplicas != replicas {
			return fmt.Errorf("%d/%d available", d.Status.AvailableReplicas, replicas)
		}
		pods, err := c.Kube.CoreV1().Pods(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			return err
		}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" && p.Spec.NodeName != "" {
				running++
			}
		}
		if running != int(replicas) {
			return fmt.Errorf("%d of %d pods running with an IP on a node", running, len(pods.Items))
		}
		return nil
	})
}

// TestMemberRunsDeploymentsAndKeepsThemAcrossRestart: a Deployment of 5 replicas becomes 5/5 Available on a
// member cluster, and is still there, Available, after the member restarts.
func TestMemberRunsDeploymentsAndKeepsThemAcrossRestart(t *testing.T) {
	ctx := context.Background()
	m := framework.StartMember(t, "m1")
	nodes, err := m.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 3 {
		t.Fatalf("member has %d nodes, want 3", len(nodes.Items))
	}
	if _, err := m.Kube.AppsV1().Deployments(metav1.NamespaceDefault).Create(ctx, deployment(metav1.NamespaceDefault, "web", 5), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAvailable(t, m, "web", 5)

	m.Restart()
	waitAvailable(t, m, "web", 5)

	// The member still does work after the restart: scaling down completes pod deletion.
	if _, err := m.Kube.AppsV1().Deployments(metav1.NamespaceDefault).Patch(ctx, "web", types.MergePatchType,
		[]byte(`{"spec":{"replicas":2}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 2*time.Minute, "scale down to 2 completes", func() error {
		pods, err := m.Kube.CoreV1().Pods(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return err
		}
		if len(pods.Items) != 2 {
			return fmt.Errorf("%d pods", len(pods.Items))
		}
		return nil
	})
}

// TestHubAndMembersSideBySide runs a hub and two members at once: each serves its own API and the members
// run their own workloads.
func TestHubAndMembersSideBySide(t *testing.T) {
	ctx := context.Background()
	hub := framework.StartHub(t)
	m1 := framework.StartMember(t, "m1", "--nodes", "2")
	m2 := framework.StartMember(t, "m2", "--nodes", "1", "--node-cpu", "4", "--node-memory", "8Gi")

	for _, m := range []*framework.Cluster{m1, m2} {
		if _, err := m.Kube.AppsV1().Deployments(metav1.NamespaceDefault).Create(ctx, deployment(metav1.NamespaceDefault, "app-"+m.Name, 3), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitAvailable(t, m1, "app-m1", 3)
	waitAvailable(t, m2, "app-m2", 3)

	// Each cluster is its own: m1's Deployment is not in m2, and the hub runs no pods at all.
	if _, err := m2.Kube.AppsV1().Deployments(metav1.NamespaceDefault).Get(ctx, "app-m1", metav1.GetOptions{}); err == nil {
		t.Fatal("m1's Deployment is visible in m2")
	}
	node, err := m2.Kube.CoreV1().Nodes().Get(ctx, "m2-node-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := node.Status.Allocatable.Cpu().String(); got != "4" {
		t.Fatalf("m2 node allocatable cpu = %s, want 4", got)
	}
	// The same Deployment goes to the hub and to m1; once m1's controllers made its ReplicaSet, the hub, whose
	// templates are inert, still has none.
	for _, c := range []*framework.Cluster{hub, m1} {
		if _, err := c.Kube.AppsV1().Deployments(metav1.NamespaceDefault).Create(ctx, deployment(metav1.NamespaceDefault, "template", 2), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitAvailable(t, m1, "template", 2)
	rs, err := hub.Kube.AppsV1().ReplicaSets(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs.Items) != 0 {
		t.Fatalf("the hub ran a Deployment: %d ReplicaSets", len(rs.Items))
	}
}
