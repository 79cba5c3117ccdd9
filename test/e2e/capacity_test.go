package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// TestReplicasGoWhereANodeFits: a Deployment of 2 replicas × 33 CPU, Aggregated over the shared members
// (three 32-CPU nodes each: 96 CPUs free in sum, room enough by summed capacity), is placed nowhere, and the
// binding's Scheduled condition and flotilla explain say that no node fits 33 CPU. A member with two 64-CPU
// nodes (flotilla dev member --node-cpu 64) joins, and both replicas go there and run.
//
// Then descheduling: a Deployment of 2 replicas × 1 CPU aggregated on that member, whose nodes are then
// cordoned and its pods deleted, so they stay Pending there; once m1 is in the placement too, after the
// policy's descheduleAfter the replicas move to m1 and run, and the template's events say so.
func TestReplicasGoWhereANodeFits(t *testing.T) {
	ctx := context.Background()
	f := useFleet(t)
	const big = "cap64"
	d := deployment(f.ns, "wide", 2)
	d.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("33")}
	f.createDeployment(t, d)
	placement := placementOn("m1", "m2", "m3", big)
	placement.ReplicaScheduling = &policyv1alpha1.ReplicaSchedulingStrategy{
		ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingDivided, ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionAggregated}
	f.createPolicy(t, "wide", deploymentSelector("wide"), placement)

	want := "3 have no node that fits 33 CPU (m1, m2, m3)"
	testenv.Eventually(t, 2*time.Minute, "the binding unschedulable for want of a node", func() error {
		rb := &workv1alpha1.ResourceBinding{}
		if err := f.hub.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "wide-deployment"}, rb); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(rb.Status.Conditions, workv1alpha1.ConditionScheduled)
		if cond == nil || cond.Status != metav1.ConditionFalse || !strings.Contains(cond.Message, want) {
			return fmt.Errorf("Scheduled: %+v", cond)
		}
		if len(rb.Spec.Clusters) != 0 {
			t.Fatalf("placed on %v though no node fits", rb.Spec.Clusters)
		}
		return nil
	})
	if out := strings.Join(strings.Fields(f.hub.Flotilla("explain", "deployment/wide", "-n", f.ns)), " "); !strings.Contains(out, "m1 no - NodeFit: have no node that fits 33 CPU") {
		t.Fatalf("flotilla explain says:\n%s", out)
	}

	m := framework.StartMember(t, big, "--nodes", "2", "--node-cpu", "64")
	framework.JoinPush(t, f.hub, m)
	t.Cleanup(func() {
		_ = f.hub.Kube.AppsV1().Deployments(f.ns).Delete(context.Background(), "wide", metav1.DeleteOptions{})
		f.hub.Flotilla("unjoin", big)
	})
	waitPlaced(t, f.ns, "wide", map[*framework.Cluster]int32{m: 2, f.m1: -1, f.m2: -1, f.m3: -1})

	// Descheduling. The copy in the member keeps running until its replacement is healthy on m1.
	small := deployment(f.ns, "spill", 2)
	small.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	f.createDeployment(t, small)
	spill := placementOn(big)
	spill.ReplicaScheduling = &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingDivided,
		ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionAggregated, DescheduleAfter: &metav1.Duration{Duration: 5 * time.Second}}
	f.createPolicy(t, "spill", deploymentSelector("spill"), spill)
	waitPlaced(t, f.ns, "spill", map[*framework.Cluster]int32{m: 2, f.m1: -1})
	changePolicy(t, f.hub, f.ns, "spill", func(p *policyv1alpha1.PropagationPolicy) {
		p.Spec.Placement.ClusterAffinity.ClusterNames = []string{big, "m1"}
	})
	nodes, err := m.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		n.Spec.Unschedulable = true
		if _, err := m.Kube.CoreV1().Nodes().Update(ctx, &n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Kube.CoreV1().Pods(f.ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))},
		metav1.ListOptions{LabelSelector: "app=spill"}); err != nil {
		t.Fatal(err)
	}
	waitPlaced(t, f.ns, "spill", map[*framework.Cluster]int32{m: -1, f.m1: 2})
	testenv.Eventually(t, time.Minute, "a Descheduled event on the template", func() error {
		events, err := f.hub.Kube.EventsV1().Events(f.ns).List(ctx, metav1.ListOptions{FieldSelector: "regarding.name=spill"})
		if err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Reason == "Descheduled" && strings.Contains(e.Note, "2 from "+big+" (unschedulable there since") {
				return nil
			}
		}
		return fmt.Errorf("%d events, none Descheduled", len(events.Items))
	})
	// The 2 CPUs on m1 go before the next test on the shared fleet counts m1's allocation.
	if err := f.hub.Kube.AppsV1().Deployments(f.ns).Delete(ctx, "spill", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 2*time.Minute, "spill's pods gone from m1", func() error {
		pods, err := f.m1.Kube.CoreV1().Pods(f.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=spill"})
		if err != nil {
			return err
		}
		if len(pods.Items) > 0 {
			return fmt.Errorf("%d pods left", len(pods.Items))
		}
		return nil
	})
}
