package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/execution"
	"github.com/flotilla-io/flotilla/internal/testenv"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// TestSuspendedDispatchingHoldsChangesUntilResumed: while a policy suspends dispatching, a change of the
// template reaches no member (each keeps the replicas and image it ran); resuming delivers the latest.
func TestSuspendedDispatchingHoldsChangesUntilResumed(t *testing.T) {
	f := useFleet(t)
	suspendAndResume(t, f, &policyv1alpha1.Suspension{Dispatching: ptr.To(true)}, []*framework.Cluster{f.m1, f.m2}, nil)
}

// TestSuspendedDispatchingOnOneCluster: dispatchingOnClusters suspends only the named cluster: m1 takes the
// change at once, m2 keeps what it ran until dispatching resumes.
func TestSuspendedDispatchingOnOneCluster(t *testing.T) {
	f := useFleet(t)
	suspension := &policyv1alpha1.Suspension{DispatchingOnClusters: &policyv1alpha1.SuspendClusters{ClusterNames: []string{"m2"}}}
	suspendAndResume(t, f, suspension, []*framework.Cluster{f.m2}, []*framework.Cluster{f.m1})
}

// suspendAndResume places a 2-replica Deployment on m1 and m2, suspends its policy's dispatching, scales it
// to 3 and changes its image: the dispatched clusters run the change, the suspended ones keep 2 replicas of
// the old image while their Works hold the change. Lifting the suspension delivers it everywhere.
func suspendAndResume(t *testing.T, f *fleet, suspension *policyv1alpha1.Suspension, suspended, dispatched []*framework.Cluster) {
	t.Helper()
	ctx := context.Background()
	f.createDeployment(t, deployment(f.ns, "web", 2))
	f.createPolicy(t, "web", deploymentSelector("web"), placementOn("m1", "m2"))
	waitRunning(t, f.ns, "web", 2, "nginx", f.m1, f.m2)

	changePolicy(t, f.hub, f.ns, "web", func(p *policyv1alpha1.PropagationPolicy) { p.Spec.Suspension = suspension })
	// The suspension must reach the Works before the change does, or the change could go out first.
	for _, m := range suspended {
		waitWorkSuspended(t, f.hub, f.ns, "web-deployment", m.Name, "nginx")
	}
	changeDeployment(t, f.hub, f.ns, "web", func(d *appsv1.Deployment) {
		d.Spec.Replicas = ptr.To[int32](3)
		d.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
	})
	waitRunning(t, f.ns, "web", 3, "nginx:1.28", dispatched...)
	for _, m := range suspended {
		// The member's executor has seen the Work that carries the change and held it back...
		waitWorkSuspended(t, f.hub, f.ns, "web-deployment", m.Name, "nginx:1.28")
		// ...so the member still runs what it ran before.
		replicas, d, err := replicasIn(ctx, m, f.ns, "web")
		if err != nil || d == nil {
			t.Fatalf("%s lost its copy while suspended (%v)", m.Name, err)
		}
		if image := d.Spec.Template.Spec.Containers[0].Image; replicas != 2 || image != "nginx" {
			t.Fatalf("%s took a change while suspended: %d replicas of %s", m.Name, replicas, image)
		}
	}

	changePolicy(t, f.hub, f.ns, "web", func(p *policyv1alpha1.PropagationPolicy) { p.Spec.Suspension = nil })
	waitRunning(t, f.ns, "web", 3, "nginx:1.28", f.m1, f.m2)
}

// waitRunning waits until each member runs the Deployment with the given replicas, all Available, and image.
func waitRunning(t *testing.T, namespace, name string, replicas int32, image string, members ...*framework.Cluster) {
	t.Helper()
	testenv.Eventually(t, 2*time.Minute, fmt.Sprintf("%s runs %d of %s", name, replicas, image), func() error {
		for _, m := range members {
			got, d, err := replicasIn(context.Background(), m, namespace, name)
			if err != nil {
				return err
			}
			if d == nil {
				return fmt.Errorf("not in %s", m.Name)
			}
			if img := d.Spec.Template.Spec.Containers[0].Image; got != replicas || img != image || d.Status.AvailableReplicas != replicas {
				return fmt.Errorf("%s runs %d of %s, %d available", m.Name, got, img, d.Status.AvailableReplicas)
			}
		}
		return nil
	})
}

// waitWorkSuspended waits until the binding's Work for a cluster carries the image and suspends dispatching,
// and the cluster's executor reported Applied=False Suspended for that very generation of the Work.
func waitWorkSuspended(t *testing.T, hub *framework.Cluster, namespace, bindingName, cluster, image string) {
	t.Helper()
	rb := &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: bindingName}}
	key := client.ObjectKey{Namespace: clusterv1alpha1.ClusterNamespace(cluster), Name: workv1alpha1.WorkName(rb.Namespace, rb.Name)}
	testenv.Eventually(t, time.Minute, "the Work for "+cluster+" holds "+image+" back", func() error {
		w := &workv1alpha1.Work{}
		if err := hub.Client.Get(context.Background(), key, w); err != nil {
			return err
		}
		if !ptr.Deref(w.Spec.SuspendDispatching, false) {
			return fmt.Errorf("not suspended")
		}
		if !slices.ContainsFunc(w.Spec.Workload.Manifests, func(m workv1alpha1.Manifest) bool {
			return strings.Contains(string(m.Raw), `"image":"`+image+`"`)
		}) {
			return fmt.Errorf("does not carry %s yet", image)
		}
		c := meta.FindStatusCondition(w.Status.Conditions, workv1alpha1.WorkConditionApplied)
		if c == nil || c.Reason != execution.ReasonSuspended || c.ObservedGeneration != w.Generation {
			return fmt.Errorf("generation %d, Applied: %+v", w.Generation, c)
		}
		return nil
	})
}

// changePolicy changes a PropagationPolicy on the hub.
func changePolicy(t *testing.T, hub *framework.Cluster, namespace, name string, change func(*policyv1alpha1.PropagationPolicy)) {
	t.Helper()
	update(t, hub, &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}, change)
}
