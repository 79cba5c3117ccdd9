package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-io/flotilla/api/addon/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// The example add-on's names, as examples/addons/ spells them.
const (
	helloAddOn     = "hello"
	helloNamespace = "flotilla-addons" // its AddOnConfig and Placement
)

// applyHelloExample creates the objects of examples/addons/ on the hub, the add-on last, its Placement
// deciding on the clusters named instead of the labelled ones (the shared fleet's labels stay as they are).
// Everything is deleted when the test ends, the AddOn first.
func applyHelloExample(t *testing.T, hub *framework.Cluster, clusters ...string) {
	t.Helper()
	files, err := filepath.Glob("../../examples/addons/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples/addons/*.yaml: %v", err)
	}
	var objects []*unstructured.Unstructured
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			obj := &unstructured.Unstructured{}
			if err := decoder.Decode(&obj.Object); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if len(obj.Object) > 0 {
				objects = append(objects, obj)
			}
		}
	}
	rank := map[string]int{"Namespace": 0, "AddOn": 2}
	slices.SortStableFunc(objects, func(a, b *unstructured.Unstructured) int {
		ra, ok := rank[a.GetKind()]
		if !ok {
			ra = 1
		}
		rb, ok := rank[b.GetKind()]
		if !ok {
			rb = 1
		}
		return ra - rb
	})
	names := `["` + strings.Join(clusters, `", "`) + `"]`
	for _, obj := range objects {
		if obj.GetKind() == "Placement" {
			if err := unstructured.SetNestedSlice(obj.Object, []any{map[string]any{"requiredClusterSelector": map[string]any{
				"celSelector": map[string]any{"celExpressions": []any{"cluster.metadata.name in " + names}}}}}, "spec", "predicates"); err != nil {
				t.Fatal(err)
			}
		}
		if err := hub.Client.Create(context.Background(), obj); err != nil {
			t.Fatalf("creating %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
		t.Cleanup(func() { _ = hub.Client.Delete(context.Background(), obj) })
	}
}

// helloEnabledOn lists the clusters with a ClusterAddOn of hello that is not being deleted.
func helloEnabledOn(ctx context.Context, hub *framework.Cluster) ([]string, error) {
	list := &addonv1alpha1.ClusterAddOnList{}
	if err := hub.Client.List(ctx, list, client.MatchingFields{"metadata.name": helloAddOn}); err != nil {
		return nil, err
	}
	var clusters []string
	for _, ca := range list.Items {
		if cluster, ok := clusterv1alpha1.ClusterOfNamespace(ca.Namespace); ok && ca.DeletionTimestamp == nil {
			clusters = append(clusters, cluster)
		}
	}
	slices.Sort(clusters)
	return clusters, nil
}

// helloAvailable waits until hello's ClusterAddOn on cluster says Available is want, and returns its message.
func helloAvailable(t *testing.T, hub *framework.Cluster, cluster string, want metav1.ConditionStatus, timeout time.Duration) string {
	t.Helper()
	var msg string
	testenv.Eventually(t, timeout, fmt.Sprintf("hello Available=%s on %s", want, cluster), func() error {
		ca := &addonv1alpha1.ClusterAddOn{}
		if err := hub.Client.Get(context.Background(), client.ObjectKey{Namespace: clusterv1alpha1.ClusterNamespace(cluster), Name: helloAddOn}, ca); err != nil {
			return err
		}
		c := meta.FindStatusCondition(ca.Status.Conditions, addonv1alpha1.ConditionAvailable)
		if c == nil || c.Status != want {
			return fmt.Errorf("conditions %+v", ca.Status.Conditions)
		}
		msg = c.Message
		return nil
	})
	return msg
}

// greetingIn is the greeting of hello's Work for cluster on the hub, as rendered: what the hub has sent.
func greetingIn(ctx context.Context, hub *framework.Cluster, cluster string) (string, error) {
	w := &workv1alpha1.Work{}
	if err := hub.Client.Get(ctx, client.ObjectKey{Namespace: clusterv1alpha1.ClusterNamespace(cluster), Name: addonv1alpha1.WorkName(helloAddOn)}, w); err != nil {
		return "", err
	}
	for _, m := range w.Spec.Workload.Manifests {
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(m.Raw); err != nil {
			return "", err
		}
		if obj.GetKind() == "ConfigMap" && obj.GetName() == helloAddOn {
			greeting, _, _ := unstructured.NestedString(obj.Object, "data", "greeting")
			return greeting, nil
		}
	}
	return "", fmt.Errorf("no ConfigMap %s in the Work", helloAddOn)
}

// agentClient is a client of the hub with the hub credential hello's agent finds in a member.
func agentClient(t *testing.T, m *framework.Cluster, installNamespace string) kubernetes.Interface {
	t.Helper()
	var kubeconfig []byte
	secret := addonv1alpha1.CredentialSecretName(helloAddOn)
	testenv.Eventually(t, 3*time.Minute, fmt.Sprintf("Secret %s/%s in %s", installNamespace, secret, m.Name), func() error {
		s, err := m.Kube.CoreV1().Secrets(installNamespace).Get(context.Background(), secret, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if kubeconfig = s.Data[addonv1alpha1.CredentialSecretKey]; len(kubeconfig) == 0 {
			return fmt.Errorf("no key %s", addonv1alpha1.CredentialSecretKey)
		}
		return nil
	})
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		t.Fatalf("the credential in %s is not a kubeconfig: %v", m.Name, err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return kube
}

// writeNote creates a ConfigMap in a cluster's namespace on the hub with kube, and deletes it as the admin.
func writeNote(t *testing.T, hub *framework.Cluster, kube kubernetes.Interface, cluster, name string) error {
	t.Helper()
	ns := clusterv1alpha1.ClusterNamespace(cluster)
	_, err := kube.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name},
		Data: map[string]string{"from": "hello's agent"}}, metav1.CreateOptions{})
	if err == nil {
		t.Cleanup(func() {
			_ = hub.Kube.CoreV1().ConfigMaps(ns).Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	return err
}

// TestAddOnExampleOnTheFleet runs examples/addons/ on the shared fleet, placed on m1 and m2: installed there
// and not on m3; its agent's hub credential appears in each member and may write ConfigMaps in its own
// cluster's namespace only; a change of its config reaches one cluster at a time; an add-on Deployment with
// no available pod in m1 turns Available=False there; deleting the AddOn removes everything it installed
// and leaves the credential Forbidden.
func TestAddOnExampleOnTheFleet(t *testing.T) {
	f := useFleet(t)
	ctx := context.Background()
	applyHelloExample(t, f.hub, "m1", "m2")
	installNamespace := addonv1alpha1.DefaultInstallNamespace(helloAddOn)

	testenv.Eventually(t, 3*time.Minute, "hello enabled on m1 and m2", func() error {
		got, err := helloEnabledOn(ctx, f.hub)
		if err != nil {
			return err
		}
		if !slices.Equal(got, []string{"m1", "m2"}) {
			return fmt.Errorf("enabled on %v", got)
		}
		return nil
	})
	for _, m := range []*framework.Cluster{f.m1, f.m2} {
		testenv.Eventually(t, 3*time.Minute, "hello installed in "+m.Name, func() error {
			cm, err := m.Kube.CoreV1().ConfigMaps(installNamespace).Get(ctx, helloAddOn, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if cm.Data["cluster"] != m.Name || cm.Data["greeting"] != "Hello, "+m.Name || cm.Data["hub"] == "" || strings.Contains(cm.Data["hub"], "{{") {
				return fmt.Errorf("ConfigMap data %v", cm.Data)
			}
			d, err := m.Kube.AppsV1().Deployments(installNamespace).Get(ctx, "hello-agent", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if d.Status.AvailableReplicas != 1 {
				return fmt.Errorf("hello-agent %d/1 available", d.Status.AvailableReplicas)
			}
			return nil
		})
		helloAvailable(t, f.hub, m.Name, metav1.ConditionTrue, 2*time.Minute)
	}
	if _, err := f.m3.Kube.CoreV1().Namespaces().Get(ctx, installNamespace, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("m3, which the Placement leaves out, has namespace %s: %v", installNamespace, err)
	}
	out := f.hub.Flotilla("addon", "status", helloAddOn, "-o", "wide")
	for _, want := range []string{"strategy Placements (flotilla-addons/hello)", "m1 ", "m2 ", addonv1alpha1.AgentUser(helloAddOn, "m1")} {
		if !strings.Contains(out, want) {
			t.Errorf("flotilla addon status lacks %q:\n%s", want, out)
		}
	}

	t.Run("the agent's credential reaches its own cluster's namespace only", func(t *testing.T) {
		for _, tc := range []struct{ m, other *framework.Cluster }{{f.m1, f.m2}, {f.m2, f.m1}} {
			kube := agentClient(t, tc.m, installNamespace)
			if err := writeNote(t, f.hub, kube, tc.m.Name, "hello-from-"+tc.m.Name); err != nil {
				t.Fatalf("%s's agent may not write a ConfigMap in its own cluster's namespace: %v", tc.m.Name, err)
			}
			if err := writeNote(t, f.hub, kube, tc.other.Name, "hello-from-"+tc.m.Name); !apierrors.IsForbidden(err) {
				t.Fatalf("%s's agent wrote in %s's namespace: %v, want Forbidden", tc.m.Name, tc.other.Name, err)
			}
			if _, err := kube.CoreV1().ConfigMaps(clusterv1alpha1.ClusterNamespace(tc.m.Name)).List(ctx, metav1.ListOptions{}); err != nil {
				t.Fatalf("%s's agent may not list ConfigMaps in its own cluster's namespace: %v", tc.m.Name, err)
			}
			if _, err := kube.Discovery().RESTClient().Get().AbsPath("/apis/work.flotilla.io/v1alpha1/namespaces", clusterv1alpha1.ClusterNamespace(tc.m.Name), "works").
				DoRaw(ctx); !apierrors.IsForbidden(err) {
				t.Fatalf("%s's agent listed the Works of its cluster: %v, want Forbidden", tc.m.Name, err)
			}
		}
	})

	t.Run("a config change rolls out one cluster at a time", func(t *testing.T) {
		cfg := &addonv1alpha1.AddOnConfig{ObjectMeta: metav1.ObjectMeta{Namespace: helloNamespace, Name: helloAddOn}}
		update(t, f.hub, cfg, func(c *addonv1alpha1.AddOnConfig) {
			c.Spec.CustomizedVariables = []addonv1alpha1.CustomizedVariable{{Name: "GREETING", Value: "Hi"}}
		})
		// The hub's Works say what it has sent: with maxConcurrency 1 one cluster's Work has the new greeting
		// while the other's keeps the old one until the first is healthy on it. A member of kwok nodes rolls
		// the Deployment out in a fraction of a second, so the test sees that state at least once, with m1
		// (the first decision group) first; that the next cluster waits for the first one's health is
		// TestAddOnProgressiveRollout's (integration), where the test decides when a cluster is healthy.
		var states []string
		alone := false
		testenv.Eventually(t, 3*time.Minute, "the new greeting in both Works", func() error {
			g1, err := greetingIn(ctx, f.hub, "m1")
			if err != nil {
				return err
			}
			g2, err := greetingIn(ctx, f.hub, "m2")
			if err != nil {
				return err
			}
			n1, n2 := g1 == "Hi, m1", g2 == "Hi, m2"
			if state := fmt.Sprintf("m1 %q, m2 %q", g1, g2); len(states) == 0 || states[len(states)-1] != state {
				states = append(states, state)
			}
			if n1 && !n2 {
				alone = true
			}
			if !n1 || !n2 {
				return fmt.Errorf("states so far: %v", states)
			}
			return nil
		})
		if !alone || slices.ContainsFunc(states, func(s string) bool { return strings.HasPrefix(s, `m1 "Hello`) && strings.Contains(s, `m2 "Hi`) }) {
			t.Fatalf("the Works did not change m1 first, then m2: %v", states)
		}
		for _, m := range []*framework.Cluster{f.m1, f.m2} {
			testenv.Eventually(t, 2*time.Minute, "the new greeting in "+m.Name, func() error {
				cm, err := m.Kube.CoreV1().ConfigMaps(installNamespace).Get(ctx, helloAddOn, metav1.GetOptions{})
				if err != nil {
					return err
				}
				if cm.Data["greeting"] != "Hi, "+m.Name {
					return fmt.Errorf("greeting %q", cm.Data["greeting"])
				}
				return nil
			})
		}
		t.Logf("the Works went through %v", states)
	})

	t.Run("no available pod in m1: Available=False there", func(t *testing.T) {
		helloAvailable(t, f.hub, "m1", metav1.ConditionTrue, 2*time.Minute)
		// The Work would put back replicas scaled down in the member, so the pods go instead, and a quota of
		// no pods in the install namespace (which the add-on does not own) keeps the ReplicaSet from making
		// new ones: the Deployment in m1 has no available replica, as after a scale to zero.
		quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "no-pods"},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}}}
		if _, err := f.m1.Kube.CoreV1().ResourceQuotas(installNamespace).Create(ctx, quota, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := f.m1.Kube.CoreV1().Pods(installNamespace).DeleteCollection(ctx, metav1.DeleteOptions{},
			metav1.ListOptions{LabelSelector: "app=hello-agent"}); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, time.Minute, "hello-agent in m1 without an available replica", func() error {
			d, err := f.m1.Kube.AppsV1().Deployments(installNamespace).Get(ctx, "hello-agent", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if d.Status.AvailableReplicas != 0 {
				return fmt.Errorf("%d available", d.Status.AvailableReplicas)
			}
			return nil
		})
		msg := helloAvailable(t, f.hub, "m1", metav1.ConditionFalse, 2*time.Minute)
		t.Logf("m1: %s", msg)
		helloAvailable(t, f.hub, "m2", metav1.ConditionTrue, time.Second)
	})

	t.Run("deleting the AddOn removes everything and revokes the credential", func(t *testing.T) {
		kube := agentClient(t, f.m1, installNamespace)
		if err := f.hub.Client.Delete(ctx, &addonv1alpha1.AddOn{ObjectMeta: metav1.ObjectMeta{Name: helloAddOn}}); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 3*time.Minute, "hello's ClusterAddOns and Works gone", func() error {
			list := &addonv1alpha1.ClusterAddOnList{}
			if err := f.hub.Client.List(ctx, list, client.MatchingFields{"metadata.name": helloAddOn}); err != nil {
				return err
			}
			if len(list.Items) > 0 {
				return fmt.Errorf("%d ClusterAddOns left", len(list.Items))
			}
			for _, cluster := range []string{"m1", "m2"} {
				err := f.hub.Client.Get(ctx, client.ObjectKey{Namespace: clusterv1alpha1.ClusterNamespace(cluster), Name: addonv1alpha1.WorkName(helloAddOn)}, &workv1alpha1.Work{})
				if !apierrors.IsNotFound(err) {
					return fmt.Errorf("%s's Work: %v", cluster, err)
				}
			}
			return nil
		})
		for _, m := range []*framework.Cluster{f.m1, f.m2} {
			testenv.Eventually(t, 3*time.Minute, "hello's objects gone from "+m.Name, func() error {
				if _, err := m.Kube.CoreV1().Namespaces().Get(ctx, installNamespace, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					return fmt.Errorf("namespace %s: %v", installNamespace, err)
				}
				return nil
			})
		}
		testenv.Eventually(t, time.Minute, "m1's credential Forbidden", func() error {
			if err := writeNote(t, f.hub, kube, "m1", "hello-after"); !apierrors.IsForbidden(err) {
				return fmt.Errorf("writing with the credential of a disabled add-on: %v, want Forbidden", err)
			}
			return nil
		})
	})
}
