package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// TestUnjoinKeepsMemberObjectsAndRejoinAdoptsThem: a pull cluster whose agent is already gone is unjoined;
// its Deployment keeps running in the member. The cluster joins again under the same name and Flotilla takes
// the same Deployment over again, without a conflict and without re-creating it. An unjoin with
// --delete-resources then deletes it.
func TestUnjoinKeepsMemberObjectsAndRejoinAdoptsThem(t *testing.T) {
	ctx := context.Background()
	hub := framework.StartHub(t)
	m1 := framework.StartMember(t, "m1", "--nodes", "1")
	agent := framework.JoinPull(t, hub, m1)
	framework.WaitClustersReady(t, hub, "m1")

	if _, err := hub.Kube.AppsV1().Deployments(metav1.NamespaceDefault).Create(ctx, deployment(metav1.NamespaceDefault, "web", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := hub.Client.Create(ctx, propagationPolicy(metav1.NamespaceDefault, "web", deploymentSelector("web"), placementOn("m1"))); err != nil {
		t.Fatal(err)
	}
	waitPlaced(t, metav1.NamespaceDefault, "web", map[*framework.Cluster]int32{m1: 1})
	before, err := m1.Kube.AppsV1().Deployments(metav1.NamespaceDefault).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	agent.Kill()
	out := hub.Flotilla("unjoin", "m1")
	if !strings.Contains(out, "cluster m1 unjoined; the objects Flotilla placed in it were left there") {
		t.Fatalf("unjoin printed:\n%s", out)
	}
	if _, err := hub.Kube.CoreV1().Namespaces().Get(ctx, clusterv1alpha1.ClusterNamespace("m1"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the cluster's namespace after unjoin: %v, want it gone", err)
	}
	waitPlaced(t, metav1.NamespaceDefault, "web", map[*framework.Cluster]int32{m1: 1})

	framework.JoinPull(t, hub, m1)
	testenv.Eventually(t, 3*time.Minute, "the rejoined cluster's Work applied", func() error {
		works := &workv1alpha1.WorkList{}
		if err := hub.Client.List(ctx, works, client.InNamespace(clusterv1alpha1.ClusterNamespace("m1"))); err != nil {
			return err
		}
		if len(works.Items) != 1 {
			return fmt.Errorf("%d Works", len(works.Items))
		}
		if c := meta.FindStatusCondition(works.Items[0].Status.Conditions, workv1alpha1.WorkConditionApplied); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("Applied condition %+v", c)
		}
		return nil
	})
	after, err := m1.Kube.AppsV1().Deployments(metav1.NamespaceDefault).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.UID != before.UID {
		t.Fatal("the Deployment was re-created rather than taken over again")
	}

	out = hub.Flotilla("unjoin", "m1", "--delete-resources")
	if !strings.Contains(out, "the objects Flotilla placed in it were deleted") {
		t.Fatalf("unjoin --delete-resources printed:\n%s", out)
	}
	testenv.Eventually(t, time.Minute, "the Deployment deleted from the member", func() error {
		_, err := m1.Kube.AppsV1().Deployments(metav1.NamespaceDefault).Get(ctx, "web", metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	})
}
