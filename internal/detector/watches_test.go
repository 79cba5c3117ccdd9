package detector

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

var (
	configMapKind = schema.GroupKind{Kind: "ConfigMap"}
	secretKind    = schema.GroupKind{Kind: "Secret"}
	deployment    = schema.GroupKind{Group: "apps", Kind: "Deployment"}
)

// TestSelectedBy: a PropagationPolicy wants its kinds in its own namespace, whatever its selector names; a
// ClusterPropagationPolicy in the namespace its selector names, or in every one.
func TestSelectedBy(t *testing.T) {
	selecting := func(namespace, name string, selectors ...policyv1alpha1.ResourceSelector) Policy {
		return Policy{Namespace: namespace, Name: name, Spec: &policyv1alpha1.PropagationSpec{ResourceSelectors: selectors}}
	}
	configMaps := policyv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "ConfigMap"}
	inB := policyv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "ConfigMap", Namespace: "b"}
	for _, tc := range []struct {
		name     string
		policies []Policy
		want     map[schema.GroupKind]sets.Set[string]
	}{
		{"no policy", nil, map[schema.GroupKind]sets.Set[string]{}},
		{"PropagationPolicies in a and b", []Policy{selecting("a", "p", configMaps), selecting("b", "p", configMaps)},
			map[schema.GroupKind]sets.Set[string]{configMapKind: sets.New("a", "b")}},
		{"a PropagationPolicy naming another namespace", []Policy{selecting("a", "p", inB)},
			map[schema.GroupKind]sets.Set[string]{configMapKind: sets.New("a")}},
		{"a ClusterPropagationPolicy", []Policy{selecting("", "c", configMaps)},
			map[schema.GroupKind]sets.Set[string]{configMapKind: sets.New("")}},
		{"a ClusterPropagationPolicy naming a namespace", []Policy{selecting("", "c", inB)},
			map[schema.GroupKind]sets.Set[string]{configMapKind: sets.New("b")}},
		{"Flotilla's own kinds and a bad apiVersion", []Policy{selecting("", "c",
			policyv1alpha1.ResourceSelector{APIVersion: "work.flotilla.io/v1alpha1", Kind: "Work"},
			policyv1alpha1.ResourceSelector{APIVersion: "a/b/c", Kind: "Thing"})},
			map[schema.GroupKind]sets.Set[string]{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := selectedBy(tc.policies); !equalWants(got, tc.want) {
				t.Fatalf("selectedBy = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestBoundIn: bindings keep their kind wanted where they are, and propagateDeps the ConfigMaps and Secrets
// of the namespace.
func TestBoundIn(t *testing.T) {
	rb := func(namespace, apiVersion, kind string, deps bool) workv1alpha1.ResourceBinding {
		return workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "b"},
			Spec: workv1alpha1.ResourceBindingSpec{Resource: workv1alpha1.ObjectReference{APIVersion: apiVersion, Kind: kind}, PropagateDeps: deps}}
	}
	crb := workv1alpha1.ClusterResourceBinding{ObjectMeta: metav1.ObjectMeta{Name: "c"},
		Spec: workv1alpha1.ResourceBindingSpec{Resource: workv1alpha1.ObjectReference{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"}}}
	got := boundIn([]workv1alpha1.ResourceBinding{rb("a", "apps/v1", "Deployment", false), rb("b", "apps/v1", "Deployment", true)},
		[]workv1alpha1.ClusterResourceBinding{crb})
	want := map[schema.GroupKind]sets.Set[string]{
		deployment:    sets.New("a", "b"),
		configMapKind: sets.New("b"),
		secretKind:    sets.New("b"),
		{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}: sets.New(""),
	}
	if !equalWants(got, want) {
		t.Fatalf("boundIn = %v, want %v", got, want)
	}
}

// TestNarrowest: one watch of every namespace replaces those of some; a cluster-scoped kind is watched only
// where every namespace is wanted.
func TestNarrowest(t *testing.T) {
	for _, tc := range []struct {
		name       string
		namespaces sets.Set[string]
		namespaced bool
		want       sets.Set[string]
	}{
		{"some namespaces", sets.New("a", "b"), true, sets.New("a", "b")},
		{"every namespace as well", sets.New("a", ""), true, sets.New("")},
		{"a cluster-scoped kind wanted in every namespace", sets.New(""), false, sets.New("")},
		{"a cluster-scoped kind wanted by a PropagationPolicy", sets.New("a"), false, sets.New[string]()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := narrowest(tc.namespaces, tc.namespaced); !got.Equal(tc.want) {
				t.Fatalf("narrowest = %v, want %v", sets.List(got), sets.List(tc.want))
			}
		})
	}
}

// TestMerge: merged scopes take in both, under the second one's version.
func TestMerge(t *testing.T) {
	v1, v2 := deployment.WithVersion("v1"), deployment.WithVersion("v2")
	got := merge(map[schema.GroupKind]scope{deployment: {gvk: v1, namespaces: sets.New("a")}, configMapKind: {gvk: configMapKind.WithVersion("v1"), namespaces: sets.New("a")}},
		map[schema.GroupKind]scope{deployment: {gvk: v2, namespaces: sets.New("b")}, secretKind: {gvk: secretKind.WithVersion("v1"), namespaces: sets.New("")}})
	want := map[schema.GroupKind]scope{
		deployment:    {gvk: v2, namespaces: sets.New("a", "b")},
		configMapKind: {gvk: configMapKind.WithVersion("v1"), namespaces: sets.New("a")},
		secretKind:    {gvk: secretKind.WithVersion("v1"), namespaces: sets.New("")},
	}
	if len(got) != len(want) {
		t.Fatalf("merge = %v, want %v", got, want)
	}
	for gk, w := range want {
		if got[gk].gvk != w.gvk || !got[gk].namespaces.Equal(w.namespaces) {
			t.Errorf("%s: %v %v, want %v %v", gk, got[gk].gvk, sets.List(got[gk].namespaces), w.gvk, sets.List(w.namespaces))
		}
	}
	if every := merge(got, map[schema.GroupKind]scope{deployment: {gvk: v2, namespaces: sets.New("")}}); !every[deployment].namespaces.Equal(sets.New("")) {
		t.Fatalf("every namespace merged with some: %v", sets.List(every[deployment].namespaces))
	}
}

// TestCovering: a read goes to a watch only when the watch holds that version of the kind in that namespace.
func TestCovering(t *testing.T) {
	v1 := deployment.WithVersion("v1")
	templates := &Templates{watches: map[schema.GroupKind]map[string]*templateWatch{
		deployment:    {"a": {gvk: v1, namespace: "a"}},
		configMapKind: {"": {gvk: configMapKind.WithVersion("v1")}},
	}}
	for _, tc := range []struct {
		name      string
		gvk       schema.GroupVersionKind
		namespace string
		want      bool
	}{
		{"its namespace", v1, "a", true},
		{"another namespace", v1, "b", false},
		{"every namespace", v1, "", false},
		{"another version", deployment.WithVersion("v2"), "a", false},
		{"a kind watched everywhere", configMapKind.WithVersion("v1"), "b", true},
		{"a kind not watched", secretKind.WithVersion("v1"), "a", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := templates.covering(tc.gvk, tc.namespace) != nil; got != tc.want {
				t.Fatalf("covered = %v, want %v", got, tc.want)
			}
		})
	}
}

func equalWants(a, b map[schema.GroupKind]sets.Set[string]) bool {
	if len(a) != len(b) {
		return false
	}
	for gk, namespaces := range a {
		if !namespaces.Equal(b[gk]) {
			return false
		}
	}
	return true
}
