package e2e

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

func placementOn(clusters ...string) policyv1alpha1.Placement {
	return policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: clusters}}
}

func propagationPolicy(name string, selector policyv1alpha1.ResourceSelector, placement policyv1alpha1.Placement) *policyv1alpha1.PropagationPolicy {
	return &policyv1alpha1.PropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault},
		Spec:       policyv1alpha1.PropagationSpec{ResourceSelectors: []policyv1alpha1.ResourceSelector{selector}, Placement: placement},
	}
}

func deploymentSelector(name string) policyv1alpha1.ResourceSelector {
	return policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment", Name: name}
}

// replicasIn returns the Deployment's spec replicas in a member, or -1 when it is not there.
func replicasIn(ctx context.Context, c *framework.Cluster, name string) (int32, *appsv1.Deployment, error) {
	d, err := c.Kube.AppsV1().Deployments(metav1.NamespaceDefault).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return -1, nil, nil
	}
	if err != nil {
		return 0, nil, err
	}
	return ptr.Deref(d.Spec.Replicas, 1), d, nil
}

// waitPlaced waits until every member holds the Deployment with the given replicas (-1: absent), each
// Available where present.
func waitPlaced(t *testing.T, name string, want map[*framework.Cluster]int32) {
	t.Helper()
	ctx := context.Background()
	testenv.Eventually(t, 2*time.Minute, "placement of "+name, func() error {
		for c, replicas := range want {
			got, d, err := replicasIn(ctx, c, name)
			if err != nil {
				return err
			}
			if got != replicas {
				return fmt.Errorf("%s runs %d replicas, want %d", c.Name, got, replicas)
			}
			if d != nil && d.Status.AvailableReplicas != replicas {
				return fmt.Errorf("%s has %d/%d available", c.Name, d.Status.AvailableReplicas, replicas)
			}
		}
		return nil
	})
}

// TestPropagation runs the whole path on a hub with two pull members and one push member.
func TestPropagation(t *testing.T) {
	ctx := context.Background()
	hub := framework.StartHub(t, "--cluster-grace-period", "20s")
	m1, m2, m3 := framework.StartMember(t, "m1"), framework.StartMember(t, "m2"), framework.StartMember(t, "m3")
	framework.JoinPull(t, hub, m1, "--region", "eu-west-1", "--labels", "team=blue")
	framework.JoinPull(t, hub, m2, "--region", "eu-west-1")
	framework.JoinPush(t, hub, m3, "--region", "us-east-1")
	framework.WaitClustersReady(t, hub, "m1", "m2", "m3")

	t.Run("a Deployment reaches two named clusters, pull and push alike, and its status sums on the hub", func(t *testing.T) {
		if _, err := hub.Kube.AppsV1().Deployments(metav1.NamespaceDefault).Create(ctx, deployment("web", 2), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := hub.Client.Create(ctx, propagationPolicy("web", deploymentSelector("web"), placementOn("m1", "m3"))); err != nil {
			t.Fatal(err)
		}
		waitPlaced(t, "web", map[*framework.Cluster]int32{m1: 2, m2: -1, m3: 2})
		testenv.Eventually(t, time.Minute, "the hub's Deployment shows the sum", func() error {
			d, err := hub.Kube.AppsV1().Deployments(metav1.NamespaceDefault).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if d.Status.ReadyReplicas != 4 || d.Status.AvailableReplicas != 4 || d.Status.ObservedGeneration != d.Generation {
				return fmt.Errorf("hub status %+v, generation %d", d.Status, d.Generation)
			}
			return nil
		})
	})

	t.Run("an image update rolls on the members", func(t *testing.T) {
		d, err := hub.Kube.AppsV1().Deployments(metav1.NamespaceDefault).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d.Spec.Template.Spec.Containers[0].Image = "nginx:1.27"
		if _, err := hub.Kube.AppsV1().Deployments(metav1.NamespaceDefault).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 2*time.Minute, "members run the new image", func() error {
			for _, m := range []*framework.Cluster{m1, m3} {
				_, md, err := replicasIn(ctx, m, "web")
				if err != nil || md == nil || md.Spec.Template.Spec.Containers[0].Image != "nginx:1.27" || md.Status.UpdatedReplicas != 2 {
					return fmt.Errorf("%s not rolled yet (%v)", m.Name, err)
				}
			}
			return nil
		})
	})

	t.Run("a change made in a member is put back, pull and push alike", func(t *testing.T) {
		for _, m := range []*framework.Cluster{m1, m3} {
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				md, err := m.Kube.AppsV1().Deployments(metav1.NamespaceDefault).Get(ctx, "web", metav1.GetOptions{})
				if err != nil {
					return err
				}
				md.Spec.Replicas = ptr.To[int32](5)
				_, err = m.Kube.AppsV1().Deployments(metav1.NamespaceDefault).Update(ctx, md, metav1.UpdateOptions{})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		waitPlaced(t, "web", map[*framework.Cluster]int32{m1: 2, m3: 2})
	})

	t.Run("removing a cluster from the policy removes the object there; adding one places it", func(t *testing.T) {
		p := &policyv1alpha1.PropagationPolicy{}
		if err := hub.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "web"}, p); err != nil {
			t.Fatal(err)
		}
		p.Spec.Placement = placementOn("m1", "m2")
		if err := hub.Client.Update(ctx, p); err != nil {
			t.Fatal(err)
		}
		waitPlaced(t, "web", map[*framework.Cluster]int32{m1: 2, m2: 2, m3: -1})
	})

	t.Run("divided 2:1 by static weights", func(t *testing.T) {
		if _, err := hub.Kube.AppsV1().Deployments(metav1.NamespaceDefault).Create(ctx, deployment("split", 3), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		placement := placementOn("m1", "m2")
		placement.ReplicaScheduling = &policyv1alpha1.ReplicaSchedulingStrategy{
			ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingDivided,
			ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionWeighted,
			WeightPreference: &policyv1alpha1.ClusterPreferences{StaticWeightList: []policyv1alpha1.StaticClusterWeight{
				{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"m1"}}, Weight: 2},
				{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"m2"}}, Weight: 1},
			}},
		}
		if err := hub.Client.Create(ctx, propagationPolicy("split", deploymentSelector("split"), placement)); err != nil {
			t.Fatal(err)
		}
		waitPlaced(t, "split", map[*framework.Cluster]int32{m1: 2, m2: 1, m3: -1})
	})

	t.Run("dynamic weights follow each cluster's free capacity", func(t *testing.T) {
		// ballast takes 72 of a member's 96 CPUs (3 nodes × 32), leaving room for 6 replicas of 4 CPUs
		// against 24 on the other member: 5 replicas divide 4:1 towards the emptier one.
		ballast := func(c *framework.Cluster) {
			d := deployment("ballast", 3)
			d.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("24")}
			if _, err := c.Kube.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		waitAllocatedCPU := func(c *framework.Cluster, cpus int64) {
			testenv.Eventually(t, time.Minute, fmt.Sprintf("the hub sees %d CPUs allocated in %s", cpus, c.Name), func() error {
				cluster := &clusterv1alpha1.Cluster{}
				if err := hub.Client.Get(ctx, client.ObjectKey{Name: c.Name}, cluster); err != nil {
					return err
				}
				var got resource.Quantity
				if rs := cluster.Status.ResourceSummary; rs != nil {
					got = rs.Allocated[corev1.ResourceCPU]
				}
				if got.Value() != cpus {
					return fmt.Errorf("%s allocated", got.String())
				}
				return nil
			})
		}
		dynamic := func(name string) {
			d := deployment(name, 5)
			d.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}
			if _, err := hub.Kube.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			placement := placementOn("m1", "m2")
			placement.ReplicaScheduling = &policyv1alpha1.ReplicaSchedulingStrategy{
				ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingDivided,
				ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionWeighted,
				WeightPreference:          &policyv1alpha1.ClusterPreferences{DynamicWeight: policyv1alpha1.DynamicWeightByAvailableReplicas},
			}
			if err := hub.Client.Create(ctx, propagationPolicy(name, deploymentSelector(name), placement)); err != nil {
				t.Fatal(err)
			}
		}

		ballast(m2)
		waitAllocatedCPU(m2, 72)
		dynamic("roomy")
		waitPlaced(t, "roomy", map[*framework.Cluster]int32{m1: 4, m2: 1, m3: -1})
		if err := hub.Kube.AppsV1().Deployments("default").Delete(ctx, "roomy", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitPlaced(t, "roomy", map[*framework.Cluster]int32{m1: -1, m2: -1})

		// The capacity moves to the other member; a new workload follows it.
		if err := m2.Kube.AppsV1().Deployments("default").Delete(ctx, "ballast", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		ballast(m1)
		waitAllocatedCPU(m2, 0)
		waitAllocatedCPU(m1, 72)
		dynamic("roomy2")
		waitPlaced(t, "roomy2", map[*framework.Cluster]int32{m1: 1, m2: 4, m3: -1})
		for _, err := range []error{
			hub.Kube.AppsV1().Deployments("default").Delete(ctx, "roomy2", metav1.DeleteOptions{}),
			m1.Kube.AppsV1().Deployments("default").Delete(ctx, "ballast", metav1.DeleteOptions{}),
		} {
			if err != nil {
				t.Fatal(err)
			}
		}
		waitAllocatedCPU(m1, 0)
	})

	t.Run("deleting the policy leaves the workload running everywhere", func(t *testing.T) {
		if err := hub.Client.Delete(ctx, &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "split"}}); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, time.Minute, "the binding is released", func() error {
			if _, err := hub.Kube.AppsV1().Deployments("default").Get(ctx, "split", metav1.GetOptions{}); err != nil {
				return err
			}
			rbs, err := hub.Kube.Discovery().RESTClient().Get().AbsPath("/apis/work.flotilla.io/v1alpha1/namespaces/default/resourcebindings/split-deployment").DoRaw(ctx)
			if err == nil {
				return fmt.Errorf("binding still there: %d bytes", len(rbs))
			}
			return nil
		})
		waitPlaced(t, "split", map[*framework.Cluster]int32{m1: 2, m2: 1, m3: -1})
	})

	t.Run("conflictResolution Abort leaves a foreign object alone; Overwrite adopts it", func(t *testing.T) {
		foreign := deployment("taken", 1)
		foreign.Spec.Template.Spec.Containers[0].Image = "busybox"
		if _, err := m2.Kube.AppsV1().Deployments("default").Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := hub.Kube.AppsV1().Deployments("default").Create(ctx, deployment("taken", 1), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p := propagationPolicy("taken", deploymentSelector("taken"), placementOn("m2"))
		if err := hub.Client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, time.Minute, "the binding reports the conflict", func() error {
			out := hub.Flotilla("status", "deployment/taken", "-n", "default")
			if !strings.Contains(out, "already exists in the member and Flotilla did not create it") {
				return fmt.Errorf("status does not report the conflict:\n%s", out)
			}
			return nil
		})
		if _, d, _ := replicasIn(ctx, m2, "taken"); d == nil || d.Spec.Template.Spec.Containers[0].Image != "busybox" {
			t.Fatal("Abort changed the foreign object")
		}
		if err := hub.Client.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			t.Fatal(err)
		}
		p.Spec.ConflictResolution = policyv1alpha1.ConflictOverwrite
		if err := hub.Client.Update(ctx, p); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, time.Minute, "Overwrite adopts the object", func() error {
			if _, d, _ := replicasIn(ctx, m2, "taken"); d == nil || d.Spec.Template.Spec.Containers[0].Image != "nginx" {
				return fmt.Errorf("not adopted yet")
			}
			return nil
		})
	})

	t.Run("an unreachable member keeps its placement and converges when it returns", func(t *testing.T) {
		m1.Freeze()
		testenv.Eventually(t, 2*time.Minute, "frozen m1 is Unknown", func() error {
			if ready, _, err := clusterHealth(ctx, hub, "m1"); err != nil || ready != metav1.ConditionUnknown {
				return fmt.Errorf("Ready=%s %v", ready, err)
			}
			return nil
		})
		rb := &workv1alpha1.ResourceBinding{}
		if err := hub.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "web-deployment"}, rb); err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(rb.Spec.Clusters, func(c workv1alpha1.TargetCluster) bool { return c.Name == "m1" }) {
			t.Fatalf("the unreachable cluster lost its placement: %+v", rb.Spec.Clusters)
		}
		d, err := hub.Kube.AppsV1().Deployments(metav1.NamespaceDefault).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
		if _, err := hub.Kube.AppsV1().Deployments(metav1.NamespaceDefault).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		m1.Resume()
		testenv.Eventually(t, 2*time.Minute, "m1 converges after it returns", func() error {
			_, md, err := replicasIn(ctx, m1, "web")
			if err != nil || md == nil || md.Spec.Template.Spec.Containers[0].Image != "nginx:1.28" || md.Status.AvailableReplicas != 2 {
				return fmt.Errorf("m1 not converged yet (%v)", err)
			}
			return nil
		})
	})

	t.Run("propagateDeps takes the ConfigMap along, keeps it current, and removes it with the workload", func(t *testing.T) {
		settings := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "default"}, Data: map[string]string{"mode": "a"}}
		if _, err := hub.Kube.CoreV1().ConfigMaps("default").Create(ctx, settings, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		d := deployment("withdeps", 1)
		d.Spec.Template.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}
		if _, err := hub.Kube.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p := propagationPolicy("withdeps", deploymentSelector("withdeps"), placementOn("m2"))
		p.Spec.PropagateDeps = true
		if err := hub.Client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		waitPlaced(t, "withdeps", map[*framework.Cluster]int32{m1: -1, m2: 1, m3: -1})
		settingsIn := func(c *framework.Cluster) string {
			cm, err := c.Kube.CoreV1().ConfigMaps("default").Get(ctx, "settings", metav1.GetOptions{})
			if err != nil {
				return "absent"
			}
			return cm.Data["mode"]
		}
		testenv.Eventually(t, time.Minute, "the ConfigMap follows", func() error {
			if got := settingsIn(m2); got != "a" {
				return fmt.Errorf("m2 has settings %s", got)
			}
			return nil
		})
		settings.Data["mode"] = "b"
		if _, err := hub.Kube.CoreV1().ConfigMaps("default").Update(ctx, settings, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, time.Minute, "a change of the ConfigMap follows", func() error {
			if got := settingsIn(m2); got != "b" {
				return fmt.Errorf("m2 has settings %s", got)
			}
			return nil
		})
		if settingsIn(m1) != "absent" {
			t.Fatal("the ConfigMap went to a cluster the workload does not run on")
		}
		if err := hub.Kube.AppsV1().Deployments("default").Delete(ctx, "withdeps", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, time.Minute, "the ConfigMap leaves with the workload", func() error {
			if got := settingsIn(m2); got != "absent" {
				return fmt.Errorf("m2 still has settings %s", got)
			}
			return nil
		})
	})

	t.Run("override policies adapt the manifest per cluster, all or nothing", func(t *testing.T) {
		if _, err := hub.Kube.AppsV1().Deployments("default").Create(ctx, deployment("tuned", 1), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := hub.Client.Create(ctx, propagationPolicy("tuned", deploymentSelector("tuned"), placementOn("m1", "m3"))); err != nil {
			t.Fatal(err)
		}
		op := &policyv1alpha1.OverridePolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "tuned", Namespace: "default"},
			Spec: policyv1alpha1.OverrideSpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{deploymentSelector("tuned")},
				OverrideRules: []policyv1alpha1.RuleWithCluster{{
					TargetCluster: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"m1"}},
					Overriders: policyv1alpha1.Overriders{
						ImageOverrider: []policyv1alpha1.ImageOverrider{{Component: "Registry", Operator: "replace", Value: "mirror.eu"}},
						Plaintext:      []policyv1alpha1.PlaintextOverrider{{Path: "/spec/replicas", Operator: "replace", Value: &apiextensionsv1.JSON{Raw: []byte("3")}}},
					},
				}},
			},
		}
		if err := hub.Client.Create(ctx, op); err != nil {
			t.Fatal(err)
		}
		imageIn := func(c *framework.Cluster) string {
			_, d, _ := replicasIn(ctx, c, "tuned")
			if d == nil {
				return "absent"
			}
			return fmt.Sprintf("%s x%d", d.Spec.Template.Spec.Containers[0].Image, ptr.Deref(d.Spec.Replicas, 1))
		}
		testenv.Eventually(t, time.Minute, "m1 gets the override, m3 does not", func() error {
			if a, b := imageIn(m1), imageIn(m3); a != "mirror.eu/nginx x3" || b != "nginx x1" {
				return fmt.Errorf("m1 %s, m3 %s", a, b)
			}
			return nil
		})
		if out := hub.Flotilla("status", "deployment/tuned", "-n", "default"); !strings.Contains(out, "OverridePolicy/default/tuned") {
			t.Fatalf("status does not show the override:\n%s", out)
		}
		// A rule that cannot apply is reported on the binding; m1 keeps its last good manifest.
		if err := hub.Client.Get(ctx, client.ObjectKeyFromObject(op), op); err != nil {
			t.Fatal(err)
		}
		op.Spec.OverrideRules[0].Overriders.Plaintext = append(op.Spec.OverrideRules[0].Overriders.Plaintext,
			policyv1alpha1.PlaintextOverrider{Path: "/spec/nothing/here", Operator: "replace", Value: &apiextensionsv1.JSON{Raw: []byte("1")}})
		op.Spec.OverrideRules[0].Overriders.ImageOverrider[0].Value = "mirror.other"
		if err := hub.Client.Update(ctx, op); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, time.Minute, "the binding says the override fails", func() error {
			rb := &workv1alpha1.ResourceBinding{}
			if err := hub.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "tuned-deployment"}, rb); err != nil {
				return err
			}
			c := meta.FindStatusCondition(rb.Status.Conditions, workv1alpha1.ConditionOverridden)
			if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "/spec/nothing/here") {
				return fmt.Errorf("condition %+v", c)
			}
			return nil
		})
		if got := imageIn(m1); got != "mirror.eu/nginx x3" {
			t.Fatalf("m1 runs %s: a failing override must not half-apply", got)
		}
		if err := hub.Client.Delete(ctx, op); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, time.Minute, "without the policy m1 runs the template as is", func() error {
			if got := imageIn(m1); got != "nginx x1" {
				return fmt.Errorf("m1 %s", got)
			}
			return nil
		})
	})

	t.Run("a fieldOverrider changes one value inside a ConfigMap's YAML on one cluster", func(t *testing.T) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-config", Namespace: "default"},
			Data: map[string]string{"config.yaml": "log:\n  level: info\nport: 8080\n"}}
		if _, err := hub.Kube.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		selector := policyv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "ConfigMap", Name: "app-config"}
		if err := hub.Client.Create(ctx, propagationPolicy("app-config", selector, placementOn("m1", "m2"))); err != nil {
			t.Fatal(err)
		}
		op := &policyv1alpha1.OverridePolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "app-config", Namespace: "default"},
			Spec: policyv1alpha1.OverrideSpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{selector},
				OverrideRules: []policyv1alpha1.RuleWithCluster{{
					TargetCluster: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"m2"}},
					Overriders: policyv1alpha1.Overriders{FieldOverrider: []policyv1alpha1.FieldOverrider{{
						FieldPath: "/data/config.yaml",
						YAML: []policyv1alpha1.JSONPatchOperation{{SubPath: "/log/level", Operator: "replace",
							Value: &apiextensionsv1.JSON{Raw: []byte(`"debug"`)}}},
					}}},
				}},
			},
		}
		if err := hub.Client.Create(ctx, op); err != nil {
			t.Fatal(err)
		}
		configIn := func(c *framework.Cluster) (map[string]any, error) {
			got, err := c.Kube.CoreV1().ConfigMaps("default").Get(ctx, "app-config", metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			config := map[string]any{}
			return config, yaml.Unmarshal([]byte(got.Data["config.yaml"]), &config)
		}
		testenv.Eventually(t, time.Minute, "m2's config says debug, m1's info, both keep the port", func() error {
			for c, level := range map[*framework.Cluster]string{m1: "info", m2: "debug"} {
				config, err := configIn(c)
				if err != nil {
					return err
				}
				if want := map[string]any{"log": map[string]any{"level": level}, "port": float64(8080)}; !reflect.DeepEqual(config, want) {
					return fmt.Errorf("%s holds %v, want %v", c.Name, config, want)
				}
			}
			return nil
		})
	})

	t.Run("spread over two regions picks one cluster in each", func(t *testing.T) {
		if _, err := hub.Kube.AppsV1().Deployments("default").Create(ctx, deployment("spread", 1), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p := propagationPolicy("spread", deploymentSelector("spread"), policyv1alpha1.Placement{SpreadConstraints: []policyv1alpha1.SpreadConstraint{
			{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MaxGroups: 2},
			{SpreadByField: policyv1alpha1.SpreadByFieldRegion, MinGroups: 2, MaxGroups: 2},
		}})
		if err := hub.Client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		waitPlaced(t, "spread", map[*framework.Cluster]int32{m1: 1, m2: -1, m3: 1})
	})

	t.Run("affinity groups fall back when the first group's cluster is tainted", func(t *testing.T) {
		hub.Flotilla("taint", "cluster", "m2", "maintenance:NoSchedule")
		if _, err := hub.Kube.AppsV1().Deployments("default").Create(ctx, deployment("groups", 1), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p := propagationPolicy("groups", deploymentSelector("groups"), policyv1alpha1.Placement{ClusterAffinities: []policyv1alpha1.ClusterAffinityTerm{
			{AffinityName: "primary", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"m2"}}},
			{AffinityName: "backup", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"m1"}}},
		}})
		if err := hub.Client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		waitPlaced(t, "groups", map[*framework.Cluster]int32{m1: 1, m2: -1})
		rb := &workv1alpha1.ResourceBinding{}
		if err := hub.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "groups-deployment"}, rb); err != nil {
			t.Fatal(err)
		}
		if rb.Status.SchedulerObservedAffinityName != "backup" {
			t.Fatalf("binding uses group %q, want backup", rb.Status.SchedulerObservedAffinityName)
		}
		hub.Flotilla("taint", "cluster", "m2", "maintenance:NoSchedule-")
	})

	t.Run("rescheduling follows a cluster's labels; with no cluster left the placement stays", func(t *testing.T) {
		if _, err := hub.Kube.AppsV1().Deployments("default").Create(ctx, deployment("labelled", 1), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p := propagationPolicy("labelled", deploymentSelector("labelled"), policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "blue"}}}})
		if err := hub.Client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		waitPlaced(t, "labelled", map[*framework.Cluster]int32{m1: 1, m2: -1, m3: -1})
		relabel := func(name, value string) {
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error { // the health monitor writes Clusters too
				c := &clusterv1alpha1.Cluster{}
				if err := hub.Client.Get(ctx, client.ObjectKey{Name: name}, c); err != nil {
					return err
				}
				if value == "" {
					delete(c.Labels, "team")
				} else {
					metav1.SetMetaDataLabel(&c.ObjectMeta, "team", value)
				}
				return hub.Client.Update(ctx, c)
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		relabel("m2", "blue")
		relabel("m1", "")
		testenv.Eventually(t, time.Minute, "labelled follows the label", func() error {
			rb := &workv1alpha1.ResourceBinding{}
			if err := hub.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "labelled-deployment"}, rb); err != nil {
				return err
			}
			if len(rb.Spec.Clusters) != 1 || rb.Spec.Clusters[0].Name != "m2" {
				return fmt.Errorf("placed on %+v: %+v", rb.Spec.Clusters, meta.FindStatusCondition(rb.Status.Conditions, workv1alpha1.ConditionScheduled))
			}
			return nil
		})
		waitPlaced(t, "labelled", map[*framework.Cluster]int32{m1: -1, m2: 1, m3: -1})
		relabel("m2", "")
		testenv.Eventually(t, time.Minute, "Scheduled=False says why", func() error {
			rb := &workv1alpha1.ResourceBinding{}
			if err := hub.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "labelled-deployment"}, rb); err != nil {
				return err
			}
			if c := meta.FindStatusCondition(rb.Status.Conditions, workv1alpha1.ConditionScheduled); c == nil || c.Status != metav1.ConditionFalse ||
				!strings.Contains(c.Message, "the current placement stays") {
				return fmt.Errorf("condition %+v", c)
			}
			return nil
		})
		waitPlaced(t, "labelled", map[*framework.Cluster]int32{m1: -1, m2: 1, m3: -1})
	})

	t.Run("a higher-priority policy with preemption Always takes a claimed template", func(t *testing.T) {
		if _, err := hub.Kube.AppsV1().Deployments("default").Create(ctx, deployment("contested", 1), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := hub.Client.Create(ctx, propagationPolicy("contested-low", deploymentSelector("contested"), placementOn("m1"))); err != nil {
			t.Fatal(err)
		}
		waitPlaced(t, "contested", map[*framework.Cluster]int32{m1: 1, m2: -1})
		high := propagationPolicy("contested-high", deploymentSelector("contested"), placementOn("m2"))
		high.Spec.Priority, high.Spec.Preemption = ptr.To[int32](10), policyv1alpha1.PreemptAlways
		if err := hub.Client.Create(ctx, high); err != nil {
			t.Fatal(err)
		}
		waitPlaced(t, "contested", map[*framework.Cluster]int32{m1: -1, m2: 1})
	})

	t.Run("a NoExecute taint moves a workload without a gap in availability", func(t *testing.T) {
		if _, err := hub.Kube.AppsV1().Deployments("default").Create(ctx, deployment("mover", 2), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		placement := placementOn("m1", "m2")
		placement.SpreadConstraints = []policyv1alpha1.SpreadConstraint{{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MaxGroups: 1}}
		if err := hub.Client.Create(ctx, propagationPolicy("mover", deploymentSelector("mover"), placement)); err != nil {
			t.Fatal(err)
		}
		waitPlaced(t, "mover", map[*framework.Cluster]int32{m1: 2, m2: -1})
		hub.Flotilla("taint", "cluster", "m1", "evacuate:NoExecute")
		available := func(c *framework.Cluster) int32 {
			_, d, _ := replicasIn(ctx, c, "mover")
			if d == nil {
				return 0
			}
			return d.Status.AvailableReplicas
		}
		testenv.Eventually(t, 2*time.Minute, "the workload leaves m1 for m2, never below 2 available", func() error {
			a1, a2 := available(m1), available(m2)
			if a1+a2 < 2 {
				t.Fatalf("availability gap: m1 %d + m2 %d available", a1, a2)
			}
			if got, _, _ := replicasIn(ctx, m1, "mover"); got != -1 || a2 != 2 {
				return fmt.Errorf("m1 %d available (present: %v), m2 %d", a1, got != -1, a2)
			}
			return nil
		})
		hub.Flotilla("taint", "cluster", "m1", "evacuate:NoExecute-")
	})

	t.Run("killing the hub while it propagates 50 objects loses and duplicates nothing", func(t *testing.T) {
		p := &policyv1alpha1.PropagationPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "many", Namespace: "default"},
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
			d := deployment(fmt.Sprintf("many-%02d", i), 1)
			d.Labels = map[string]string{"batch": "many"}
			if _, err := hub.Kube.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if i == 25 {
				hub.KillAndRestart()
			}
		}
		testenv.Eventually(t, 3*time.Minute, "all 50 run once in m1 and m3", func() error {
			for _, c := range []*framework.Cluster{m1, m3} {
				list, err := c.Kube.AppsV1().Deployments("default").List(ctx, metav1.ListOptions{LabelSelector: "batch=many"})
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
		if err := hub.Client.List(ctx, rbs, client.InNamespace("default")); err != nil {
			t.Fatal(err)
		}
		works := &workv1alpha1.WorkList{}
		if err := hub.Client.List(ctx, works); err != nil {
			t.Fatal(err)
		}
		manyBindings, manyWorks := 0, 0
		for _, b := range rbs.Items {
			if strings.HasPrefix(b.Name, "many-") {
				manyBindings++
			}
		}
		for _, w := range works.Items {
			if strings.HasPrefix(w.Name, "default.many-") {
				manyWorks++
			}
		}
		if manyBindings != 50 || manyWorks != 100 {
			t.Fatalf("%d bindings and %d Works, want 50 and 100", manyBindings, manyWorks)
		}
	})

	t.Run("deleting the template removes it everywhere, except where Flotilla adopted the object", func(t *testing.T) {
		takenWorks := client.MatchingLabels{workv1alpha1.LabelBindingName: "taken-deployment"}
		if works := (&workv1alpha1.WorkList{}); hub.Client.List(ctx, works, takenWorks) != nil || len(works.Items) != 1 {
			t.Fatalf("taken has %d Works, want 1", len(works.Items))
		}
		for _, name := range []string{"web", "taken"} {
			if err := hub.Kube.AppsV1().Deployments("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		waitPlaced(t, "web", map[*framework.Cluster]int32{m1: -1, m2: -1, m3: -1})
		testenv.Eventually(t, time.Minute, "the Works of taken gone", func() error {
			works := &workv1alpha1.WorkList{}
			if err := hub.Client.List(ctx, works, takenWorks); err != nil {
				return err
			}
			if len(works.Items) > 0 {
				return fmt.Errorf("%d Works left", len(works.Items))
			}
			return nil
		})
		// taken existed in m2 before Flotilla adopted it with Overwrite: it is left there, not deleted.
		if _, d, err := replicasIn(ctx, m2, "taken"); err != nil || d == nil || d.Annotations[workv1alpha1.AnnotationAdopted] != "true" {
			t.Fatalf("the adopted Deployment was not left in m2: %v, %v", err, d)
		}
		waitPlaced(t, "taken", map[*framework.Cluster]int32{m1: -1, m3: -1})
	})
}
