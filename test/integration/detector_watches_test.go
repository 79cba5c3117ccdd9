package integration

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// templateWatches reads from the hub's flotilla_template_watches where it watches templates of kind: the
// namespaces, "" for every namespace.
func templateWatches(t *testing.T, kind schema.GroupKind) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, m := range scrape(t)["flotilla_template_watches"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["kind"] == kind.String() && m.GetGauge().GetValue() == 1 {
			out[labels["namespace"]] = true
		}
	}
	return out
}

// waitWatches waits until, of the namespaces named, the hub watches templates of kind in those set true and
// not in those set false ("": every namespace).
func waitWatches(t *testing.T, kind schema.GroupKind, want map[string]bool) {
	t.Helper()
	testenv.Eventually(t, hangGuard, fmt.Sprintf("%s watched: %v", kind, want), func() error {
		got := templateWatches(t, kind)
		for namespace, watched := range want {
			if got[namespace] != watched {
				return fmt.Errorf("watched in %q", slices.Sorted(maps.Keys(got)))
			}
		}
		return nil
	})
}

// waitUnclaimed waits until template obj carries no claim and has no binding.
func waitUnclaimed(t *testing.T, obj *unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	testenv.Eventually(t, hangGuard, "released "+obj.GetNamespace()+"/"+obj.GetName(), func() error {
		if _, err := binding(ctx, obj.GroupVersionKind().GroupKind(), obj.GetNamespace(), obj.GetName()); !apierrors.IsNotFound(err) {
			return fmt.Errorf("binding still there (%v)", err)
		}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		if l := obj.GetLabels(); l[policyv1alpha1.LabelClusterPropagationPolicy] != "" || l[policyv1alpha1.LabelPropagationPolicyName] != "" {
			return fmt.Errorf("claim labels %v", l)
		}
		return nil
	})
}

// TestDetectorStopsWatchingUnselectedKinds: once the only policy that selects a kind is deleted and its
// templates are released, the hub watches that kind no more.
func TestDetectorStopsWatchingUnselectedKinds(t *testing.T) {
	ctx := context.Background()
	const group = "unwatched.detector.example.io"
	kind := schema.GroupKind{Group: group, Kind: "Sprocket"}
	createCRD(t, widgetCRD(group, kind.Kind))
	createNamespace(t, "unwatched")
	sprocket := customObject(group+"/v1", kind.Kind, "unwatched", "s")
	// An established CRD may take a moment to reach the test client's discovery.
	testenv.Eventually(t, hangGuard, "the sprocket created", func() error {
		err := env.Client.Create(ctx, sprocket)
		if err != nil && !meta.IsNoMatchError(err) {
			t.Fatal(err)
		}
		return err
	})
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), sprocket) })
	waitWatches(t, kind, map[string]bool{"": false, "unwatched": false}) // nothing selects it yet

	policy := clusterPolicy("sprockets", policyv1alpha1.ResourceSelector{APIVersion: group + "/v1", Kind: kind.Kind})
	create(t, policy)
	testenv.Eventually(t, hangGuard, "the sprocket's binding", func() error {
		_, err := binding(ctx, kind, "unwatched", "s")
		return err
	})
	waitWatches(t, kind, map[string]bool{"": true}) // a ClusterPropagationPolicy: every namespace

	if err := env.Client.Delete(ctx, policy); err != nil {
		t.Fatal(err)
	}
	waitUnclaimed(t, sprocket)
	waitWatches(t, kind, map[string]bool{"": false, "unwatched": false})
}

// TestDetectorWatchesPolicyNamespaceOnly: a PropagationPolicy that selects ConfigMaps makes the hub watch
// ConfigMaps in its namespace only; it claims and releases the templates there as ever, and no other
// namespace's.
func TestDetectorWatchesPolicyNamespaceOnly(t *testing.T) {
	ctx := context.Background()
	createNamespace(t, "watched-a")
	createNamespace(t, "watched-b")
	labels := map[string]string{"app": "namespace-only"}
	create(t, configMap("watched-a", "web", labels))
	create(t, configMap("watched-b", "web", labels))
	policy := namespacedPolicy("watched-a", "web", labelled("v1", "ConfigMap", labels))
	create(t, policy)
	testenv.Eventually(t, hangGuard, "the binding in watched-a", func() error {
		_, err := binding(ctx, configMapKind, "watched-a", "web")
		return err
	})
	waitWatches(t, configMapKind, map[string]bool{"watched-a": true, "watched-b": false, "": false})
	if _, err := binding(ctx, configMapKind, "watched-b", "web"); !apierrors.IsNotFound(err) {
		t.Fatalf("the ConfigMap of watched-b has a binding (%v)", err)
	}

	if err := env.Client.Delete(ctx, policy); err != nil {
		t.Fatal(err)
	}
	cm := &unstructured.Unstructured{}
	cm.SetGroupVersionKind(configMapKind.WithVersion("v1"))
	cm.SetNamespace("watched-a")
	cm.SetName("web")
	waitUnclaimed(t, cm)
	waitWatches(t, configMapKind, map[string]bool{"watched-a": false})
}

// TestBindingDependencyChangeReachesTheWork: the ConfigMaps a binding with propagateDeps takes along are
// watched in its namespace, and a change of one reaches the Work.
func TestBindingDependencyChangeReachesTheWork(t *testing.T) {
	ctx := context.Background()
	const namespace = "watched-deps"
	createNamespace(t, namespace)
	settings := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "settings"}, Data: map[string]string{"mode": "a"}}
	create(t, settings)
	labels := map[string]string{"app": "with-deps"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "with-deps"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx", EnvFrom: []corev1.EnvFromSource{{
				ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}}}},
		}}}
	create(t, d)
	b := placeByHand(t, d, appsv1.SchemeGroupVersion.WithKind("Deployment"), false, workv1alpha1.TargetCluster{Name: "deps-member", Replicas: 1})
	if err := env.Client.Patch(ctx, b, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"propagateDeps":true}}`)), client.FieldOwner(bindingTestManager)); err != nil {
		t.Fatal(err)
	}
	waitWatches(t, configMapKind, map[string]bool{namespace: true})
	workKey := client.ObjectKey{Namespace: clusterv1alpha1.ClusterNamespace("deps-member"), Name: workv1alpha1.WorkName(b.Namespace, b.Name)}
	workCarries := func(mode string) {
		t.Helper()
		testenv.Eventually(t, hangGuard, "the Work carries mode "+mode, func() error {
			w := &workv1alpha1.Work{}
			if err := env.Client.Get(ctx, workKey, w); err != nil {
				return err
			}
			for _, m := range w.Spec.Workload.Manifests {
				if strings.Contains(string(m.Raw), `"mode":"`+mode+`"`) {
					return nil
				}
			}
			return fmt.Errorf("%d manifests, none with mode %s", len(w.Spec.Workload.Manifests), mode)
		})
	}
	workCarries("a")
	settings.Data["mode"] = "b"
	if err := env.Client.Update(ctx, settings); err != nil {
		t.Fatal(err)
	}
	workCarries("b")
}
