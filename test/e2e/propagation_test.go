package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// TestDeploymentReachesPullAndPushClustersAndLeavesWithItsTemplate: a Deployment reaches two named
// clusters, pull and push alike, its status reaches the hub, and deleting the template removes it everywhere.
func TestDeploymentReachesPullAndPushClustersAndLeavesWithItsTemplate(t *testing.T) {
	ctx := context.Background()
	f := useFleet(t)
	f.createDeployment(t, deployment(f.ns, "web", 2))
	f.createPolicy(t, "web", deploymentSelector("web"), placementOn("m1", "m3"))
	waitPlaced(t, f.ns, "web", map[*framework.Cluster]int32{f.m1: 2, f.m2: -1, f.m3: 2})
	// Duplicated, the spec's 2 replicas are every cluster's: the hub counts 2 once both clusters have 2.
	testenv.Eventually(t, time.Minute, "the hub's Deployment shows every cluster's count", func() error {
		d, err := f.hub.Kube.AppsV1().Deployments(f.ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.Status.ReadyReplicas != 2 || d.Status.AvailableReplicas != 2 || d.Status.ObservedGeneration != d.Generation {
			return fmt.Errorf("hub status %+v, generation %d", d.Status, d.Generation)
		}
		// What kubectl wait --for=condition=... reads, folded from the members' own conditions.
		want := map[string]string{"Available": "True", "Progressing": "NewReplicaSetAvailable", workv1alpha1.TemplateConditionPropagated: "True"}
		for _, c := range d.Status.Conditions {
			if want[string(c.Type)] == string(c.Status) || want[string(c.Type)] == c.Reason {
				delete(want, string(c.Type))
			}
		}
		if len(want) > 0 {
			return fmt.Errorf("hub conditions %+v lack %v", d.Status.Conditions, want)
		}
		return nil
	})

	if err := f.hub.Kube.AppsV1().Deployments(f.ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPlaced(t, f.ns, "web", map[*framework.Cluster]int32{f.m1: -1, f.m2: -1, f.m3: -1})
}

// TestImageUpdateRollsOnMembers: a new image in the template rolls out on every member.
func TestImageUpdateRollsOnMembers(t *testing.T) {
	ctx := context.Background()
	f := useFleet(t)
	f.createDeployment(t, deployment(f.ns, "web", 2))
	f.createPolicy(t, "web", deploymentSelector("web"), placementOn("m1", "m3"))
	waitPlaced(t, f.ns, "web", map[*framework.Cluster]int32{f.m1: 2, f.m3: 2})

	setImage(t, f.hub, f.ns, "web", "nginx:1.27")
	testenv.Eventually(t, 2*time.Minute, "members run the new image", func() error {
		for _, m := range []*framework.Cluster{f.m1, f.m3} {
			_, md, err := replicasIn(ctx, m, f.ns, "web")
			if err != nil || md == nil || md.Spec.Template.Spec.Containers[0].Image != "nginx:1.27" || md.Status.UpdatedReplicas != 2 {
				return fmt.Errorf("%s not rolled yet (%v)", m.Name, err)
			}
		}
		return nil
	})
}

// setImage changes the image of a Deployment template on the hub.
func setImage(t *testing.T, hub *framework.Cluster, namespace, name, image string) {
	t.Helper()
	changeDeployment(t, hub, namespace, name, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = image })
}

// changeDeployment changes a Deployment template on the hub.
func changeDeployment(t *testing.T, hub *framework.Cluster, namespace, name string, change func(*appsv1.Deployment)) {
	t.Helper()
	update(t, hub, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}, change)
}

// TestChangeInMemberIsPutBack: a change made to a placed object in a member is undone, pull and push alike.
func TestChangeInMemberIsPutBack(t *testing.T) {
	ctx := context.Background()
	f := useFleet(t)
	f.createDeployment(t, deployment(f.ns, "web", 2))
	f.createPolicy(t, "web", deploymentSelector("web"), placementOn("m1", "m3"))
	waitPlaced(t, f.ns, "web", map[*framework.Cluster]int32{f.m1: 2, f.m3: 2})

	for _, m := range []*framework.Cluster{f.m1, f.m3} {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			md, err := m.Kube.AppsV1().Deployments(f.ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			md.Spec.Replicas = ptr.To[int32](5)
			_, err = m.Kube.AppsV1().Deployments(f.ns).Update(ctx, md, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	waitPlaced(t, f.ns, "web", map[*framework.Cluster]int32{f.m1: 2, f.m3: 2})
}

// TestPlacementChangeMovesTheObject: removing a cluster from the policy removes the object there; adding one
// places it.
func TestPlacementChangeMovesTheObject(t *testing.T) {
	f := useFleet(t)
	f.createDeployment(t, deployment(f.ns, "web", 2))
	p := f.createPolicy(t, "web", deploymentSelector("web"), placementOn("m1", "m3"))
	waitPlaced(t, f.ns, "web", map[*framework.Cluster]int32{f.m1: 2, f.m2: -1, f.m3: 2})

	update(t, f.hub, p, func(p *policyv1alpha1.PropagationPolicy) { p.Spec.Placement = placementOn("m1", "m2") })
	waitPlaced(t, f.ns, "web", map[*framework.Cluster]int32{f.m1: 2, f.m2: 2, f.m3: -1})
}

// TestConflictResolution: with Abort a foreign object in a member is left alone and the conflict reported;
// Overwrite adopts it; deleting the template then leaves the adopted object in the member, not deleted.
func TestConflictResolution(t *testing.T) {
	ctx := context.Background()
	f := useFleet(t)
	f.memberNamespace(t, f.m2)
	foreign := deployment(f.ns, "taken", 1)
	foreign.Spec.Template.Spec.Containers[0].Image = "busybox"
	if _, err := f.m2.Kube.AppsV1().Deployments(f.ns).Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.createDeployment(t, deployment(f.ns, "taken", 1))
	p := f.createPolicy(t, "taken", deploymentSelector("taken"), placementOn("m2"))
	// flotilla status fails, rightly, until the detector has bound the template.
	testenv.Eventually(t, time.Minute, "the template is bound", func() error {
		return f.hub.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "taken-deployment"}, &workv1alpha1.ResourceBinding{})
	})
	testenv.Eventually(t, time.Minute, "the binding reports the conflict", func() error {
		out := f.hub.Flotilla("status", "deployment/taken", "-n", f.ns)
		if !strings.Contains(out, "already exists in the member and Flotilla did not create it") {
			return fmt.Errorf("status does not report the conflict:\n%s", out)
		}
		return nil
	})
	if _, d, _ := replicasIn(ctx, f.m2, f.ns, "taken"); d == nil || d.Spec.Template.Spec.Containers[0].Image != "busybox" {
		t.Fatal("Abort changed the foreign object")
	}

	update(t, f.hub, p, func(p *policyv1alpha1.PropagationPolicy) {
		p.Spec.ConflictResolution = policyv1alpha1.ConflictOverwrite
	})
	testenv.Eventually(t, time.Minute, "Overwrite adopts the object", func() error {
		if _, d, _ := replicasIn(ctx, f.m2, f.ns, "taken"); d == nil || d.Spec.Template.Spec.Containers[0].Image != "nginx" {
			return fmt.Errorf("not adopted yet")
		}
		return nil
	})

	takenWorks := client.MatchingLabels{workv1alpha1.LabelBindingNamespace: f.ns, workv1alpha1.LabelBindingName: "taken-deployment"}
	if works := (&workv1alpha1.WorkList{}); f.hub.Client.List(ctx, works, takenWorks) != nil || len(works.Items) != 1 {
		t.Fatalf("taken has %d Works, want 1", len(works.Items))
	}
	if err := f.hub.Kube.AppsV1().Deployments(f.ns).Delete(ctx, "taken", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "the Works of taken gone", func() error {
		works := &workv1alpha1.WorkList{}
		if err := f.hub.Client.List(ctx, works, takenWorks); err != nil {
			return err
		}
		if len(works.Items) > 0 {
			return fmt.Errorf("%d Works left", len(works.Items))
		}
		return nil
	})
	// taken existed in m2 before Flotilla adopted it with Overwrite: it is left there, not deleted.
	if _, d, err := replicasIn(ctx, f.m2, f.ns, "taken"); err != nil || d == nil || d.Annotations[workv1alpha1.AnnotationAdopted] != "true" {
		t.Fatalf("the adopted Deployment was not left in m2: %v, %v", err, d)
	}
	waitPlaced(t, f.ns, "taken", map[*framework.Cluster]int32{f.m1: -1, f.m3: -1})
}

// TestUnreachableMemberKeepsPlacementAndConverges: a frozen member keeps its placement while the hub marks
// it Unknown, and takes the change it missed when it returns.
func TestUnreachableMemberKeepsPlacementAndConverges(t *testing.T) {
	ctx := context.Background()
	f := useFleet(t)
	f.createDeployment(t, deployment(f.ns, "web", 2))
	f.createPolicy(t, "web", deploymentSelector("web"), placementOn("m1", "m3"))
	waitPlaced(t, f.ns, "web", map[*framework.Cluster]int32{f.m1: 2, f.m3: 2})

	f.m1.Freeze()
	t.Cleanup(func() {
		f.m1.Resume()
		waitHealthy(t, f.hub, "m1")
	})
	testenv.Eventually(t, 2*time.Minute, "frozen m1 is Unknown", func() error {
		if ready, _, err := clusterHealth(ctx, f.hub, "m1"); err != nil || ready != metav1.ConditionUnknown {
			return fmt.Errorf("Ready=%s %v", ready, err)
		}
		return nil
	})
	rb := &workv1alpha1.ResourceBinding{}
	if err := f.hub.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "web-deployment"}, rb); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(rb.Spec.Clusters, func(c workv1alpha1.TargetCluster) bool { return c.Name == "m1" }) {
		t.Fatalf("the unreachable cluster lost its placement: %+v", rb.Spec.Clusters)
	}
	setImage(t, f.hub, f.ns, "web", "nginx:1.28")
	f.m1.Resume()
	testenv.Eventually(t, 2*time.Minute, "m1 converges after it returns", func() error {
		_, md, err := replicasIn(ctx, f.m1, f.ns, "web")
		if err != nil || md == nil || md.Spec.Template.Spec.Containers[0].Image != "nginx:1.28" || md.Status.AvailableReplicas != 2 {
			return fmt.Errorf("m1 not converged yet (%v)", err)
		}
		return nil
	})
}

// waitHealthy waits until the hub sees a cluster Ready and without taints.
func waitHealthy(t *testing.T, hub *framework.Cluster, name string) {
	t.Helper()
	testenv.Eventually(t, 2*time.Minute, name+" Ready and untainted", func() error {
		if ready, taints, err := clusterHealth(context.Background(), hub, name); err != nil || ready != metav1.ConditionTrue || len(taints) > 0 {
			return fmt.Errorf("Ready=%s taints=%v %v", ready, taints, err)
		}
		return nil
	})
}

// TestPropagateDepsFollowsTheWorkload: propagateDeps takes the ConfigMap along, keeps it current, and removes
// it with the workload.
func TestPropagateDepsFollowsTheWorkload(t *testing.T) {
	ctx := context.Background()
	f := useFleet(t)
	settings := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: f.ns}, Data: map[string]string{"mode": "a"}}
	if _, err := f.hub.Kube.CoreV1().ConfigMaps(f.ns).Create(ctx, settings, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	d := deployment(f.ns, "withdeps", 1)
	d.Spec.Template.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}
	f.createDeployment(t, d)
	f.createPolicy(t, "withdeps", deploymentSelector("withdeps"), placementOn("m2"), func(p *policyv1alpha1.PropagationPolicy) {
		p.Spec.PropagateDeps = true
	})
	waitPlaced(t, f.ns, "withdeps", map[*framework.Cluster]int32{f.m1: -1, f.m2: 1, f.m3: -1})
	settingsIn := func(c *framework.Cluster) string {
		cm, err := c.Kube.CoreV1().ConfigMaps(f.ns).Get(ctx, "settings", metav1.GetOptions{})
		if err != nil {
			return "absent"
		}
		return cm.Data["mode"]
	}
	testenv.Eventually(t, time.Minute, "the ConfigMap follows", func() error {
		if got := settingsIn(f.m2); got != "a" {
			return fmt.Errorf("m2 has settings %s", got)
		}
		return nil
	})
	update(t, f.hub, settings, func(cm *corev1.ConfigMap) { cm.Data["mode"] = "b" })
	testenv.Eventually(t, time.Minute, "a change of the ConfigMap follows", func() error {
		if got := settingsIn(f.m2); got != "b" {
			return fmt.Errorf("m2 has settings %s", got)
		}
		return nil
	})
	if settingsIn(f.m1) != "absent" {
		t.Fatal("the ConfigMap went to a cluster the workload does not run on")
	}
	if err := f.hub.Kube.AppsV1().Deployments(f.ns).Delete(ctx, "withdeps", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "the ConfigMap leaves with the workload", func() error {
		if got := settingsIn(f.m2); got != "absent" {
			return fmt.Errorf("m2 still has settings %s", got)
		}
		return nil
	})
}

// TestKilledHubLosesAndDuplicatesNothing: killing the hub while it propagates 50 objects loses and duplicates
// nothing. The hub restarts, so the test has a fleet of its own.
func TestKilledHubLosesAndDuplicatesNothing(t *testing.T) {
	ctx := context.Background()
	hub := framework.StartHub(t)
	m1, m3 := framework.StartMember(t, "m1"), framework.StartMember(t, "m3")
	framework.JoinPull(t, hub, m1)
	framework.JoinPush(t, hub, m3)
	framework.WaitClustersReady(t, hub, "m1", "m3")
	ns := hub.Namespace()

	p := &policyv1alpha1.PropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "many", Namespace: ns},
		Spec: policyv1alpha1.PropagationSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment",
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"batch": "many"}}}},
			Placement: placementOn("m1", "m3"),
		},
	}
	if err := hub.Client.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		d := deployment(ns, fmt.Sprintf("many-%02d", i), 1)
		d.Labels = map[string]string{"batch": "many"}
		if _, err := hub.Kube.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if i == 25 {
			hub.KillAndRestart()
		}
	}
	testenv.Eventually(t, 3*time.Minute, "all 50 run once in m1 and m3", func() error {
		for _, c := range []*framework.Cluster{m1, m3} {
			list, err := c.Kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: "batch=many"})
			if err != nil {
				return err
			}
			available := 0
			for _, d := range list.Items {
				if d.Status.AvailableReplicas == 1 {
					available++
				}
			}
			if len(list.Items) != 50 || available != 50 {
				return fmt.Errorf("%s: %d Deployments, %d available", c.Name, len(list.Items), available)
			}
		}
		return nil
	})
	rbs := &workv1alpha1.ResourceBindingList{}
	if err := hub.Client.List(ctx, rbs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	works := &workv1alpha1.WorkList{}
	if err := hub.Client.List(ctx, works, client.MatchingLabels{workv1alpha1.LabelBindingNamespace: ns}); err != nil {
		t.Fatal(err)
	}
	if len(rbs.Items) != 50 || len(works.Items) != 100 {
		t.Fatalf("%d bindings and %d Works, want 50 and 100", len(rbs.Items), len(works.Items))
	}
}
