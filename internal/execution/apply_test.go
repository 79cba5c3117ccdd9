package execution

import (
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

func object(apiVersion, kind, namespace, name string, labels, annotations map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	u.SetLabels(labels)
	u.SetAnnotations(annotations)
	return u
}

func TestApplyOrder(t *testing.T) {
	manifests := []*unstructured.Unstructured{
		object("apps/v1", "Deployment", "app", "web", nil, nil),
		object("v1", "Namespace", "", "app", nil, nil),
		object("v1", "ConfigMap", "app", "config", nil, nil),
		object("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "things.example.com", nil, nil),
		object("v1", "Namespace", "", "other", nil, nil),
	}
	got := applyOrder(manifests)
	want := []int{3, 1, 4, 0, 2} // CRDs, then namespaces, then the rest, each in manifest order
	if len(got) != len(want) {
		t.Fatalf("applyOrder = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("applyOrder = %v, want %v", got, want)
		}
	}
}

// TestClaim is the conflict rule table: only a NotFound creates, only the Work's own object (its mark of this
// hub, mark.go) or an adoption on purpose is applied over, and any other read error is retried rather than
// forced over.
func TestClaim(t *testing.T) {
	work := func(resolution policyv1alpha1.ConflictResolution) *workv1alpha1.Work {
		return &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: "flotilla-cluster-m1", Name: "default.web"},
			Spec: workv1alpha1.WorkSpec{ConflictResolution: resolution}}
	}
	ours := map[string]string{workv1alpha1.AnnotationWork: testWork,
		workv1alpha1.AnnotationOwner: ownerMark(testHub, testWork, objectID{kind: "ConfigMap", namespace: "a", name: "c"})}
	others := map[string]string{workv1alpha1.AnnotationWork: otherWork,
		workv1alpha1.AnnotationOwner: ownerMark(testHub, otherWork, objectID{kind: "ConfigMap", namespace: "a", name: "c"})}
	otherHubs := map[string]string{workv1alpha1.AnnotationWork: testWork,
		workv1alpha1.AnnotationOwner: ownerMark(otherHub, testWork, objectID{kind: "ConfigMap", namespace: "a", name: "c"})}
	copied := map[string]string{workv1alpha1.AnnotationWork: testWork,
		workv1alpha1.AnnotationOwner: ownerMark(testHub, testWork, objectID{kind: "ConfigMap", namespace: "a", name: "elsewhere"})}
	managed := map[string]string{workv1alpha1.LabelManagedBy: workv1alpha1.ManagedByValue}
	dependency := map[string]string{workv1alpha1.AnnotationDependency: "true"}
	gr := schema.GroupResource{Resource: "configmaps"}
	cases := []struct {
		name       string
		resolution policyv1alpha1.ConflictResolution
		obj        *unstructured.Unstructured
		existing   *unstructured.Unstructured
		getErr     error
		want       ownership
		conflict   bool // refused as a conflict
		retry      bool // refused to be retried
	}{
		{name: "not found creates", obj: object("v1", "ConfigMap", "a", "c", nil, nil), getErr: apierrors.NewNotFound(gr, "c"), want: absent},
		{name: "a forbidden read is retried, not forced", resolution: policyv1alpha1.ConflictOverwrite,
			obj: object("v1", "ConfigMap", "a", "c", nil, nil), getErr: apierrors.NewForbidden(gr, "c", errors.New("no")), retry: true},
		{name: "a timeout is retried", obj: object("v1", "ConfigMap", "a", "c", nil, nil), getErr: apierrors.NewTimeoutError("slow", 1), retry: true},
		{name: "an unreachable member is retried", obj: object("v1", "ConfigMap", "a", "c", nil, nil), getErr: errors.New("connection refused"), retry: true},
		{name: "its own object", obj: object("v1", "ConfigMap", "a", "c", nil, nil),
			existing: object("v1", "ConfigMap", "a", "c", managed, ours), want: owned},
		{name: "a foreign object is refused", obj: object("v1", "ConfigMap", "a", "c", nil, nil),
			existing: object("v1", "ConfigMap", "a", "c", nil, nil), conflict: true},
		{name: "another Work's object is refused", obj: object("v1", "ConfigMap", "a", "c", nil, nil),
			existing: object("v1", "ConfigMap", "a", "c", managed, others), conflict: true},
		{name: "another hub's object for a Work of the same name is refused", obj: object("v1", "ConfigMap", "a", "c", nil, nil),
			existing: object("v1", "ConfigMap", "a", "c", managed, otherHubs), conflict: true},
		{name: "an object carrying a mark copied from another object is refused", obj: object("v1", "ConfigMap", "a", "c", nil, nil),
			existing: object("v1", "ConfigMap", "a", "c", managed, copied), conflict: true},
		{name: "another hub's object is adopted under Overwrite", resolution: policyv1alpha1.ConflictOverwrite,
			obj: object("v1", "ConfigMap", "a", "c", nil, nil), existing: object("v1", "ConfigMap", "a", "c", managed, otherHubs), want: adopted},
		{name: "a dependency another hub placed is refused, not shared", obj: object("v1", "ConfigMap", "a", "c", nil, dependency),
			existing: object("v1", "ConfigMap", "a", "c", managed, otherHubs), conflict: true},
		{name: "a foreign object is adopted under Overwrite", resolution: policyv1alpha1.ConflictOverwrite,
			obj: object("v1", "ConfigMap", "a", "c", nil, nil), existing: object("v1", "ConfigMap", "a", "c", nil, nil), want: adopted},
		{name: "a dependency another Work placed is shared", obj: object("v1", "ConfigMap", "a", "c", nil, dependency),
			existing: object("v1", "ConfigMap", "a", "c", managed, others), want: shared},
		{name: "a dependency Flotilla did not place is refused", obj: object("v1", "ConfigMap", "a", "c", nil, dependency),
			existing: object("v1", "ConfigMap", "a", "c", nil, nil), conflict: true},
		{name: "a namespace Flotilla created implicitly is adopted", obj: object("v1", "Namespace", "", "a", nil, nil),
			existing: object("v1", "Namespace", "", "a", managed, nil), want: adopted},
		{name: "a namespace Flotilla did not create is refused", obj: object("v1", "Namespace", "", "a", nil, nil),
			existing: object("v1", "Namespace", "", "a", nil, nil), conflict: true},
		{name: "a namespace another Work created is refused", obj: object("v1", "Namespace", "", "a", nil, nil),
			existing: object("v1", "Namespace", "", "a", managed, others), conflict: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := claim(testHub, work(c.resolution), c.obj, c.existing, c.getErr)
			var conflict *conflictError
			switch {
			case c.conflict:
				if !errors.As(err, &conflict) {
					t.Fatalf("claim = %v, %v; want a conflict", got, err)
				}
			case c.retry:
				if err == nil || errors.As(err, &conflict) {
					t.Fatalf("claim = %v, %v; want an error to retry", got, err)
				}
			case err != nil || got != c.want:
				t.Fatalf("claim = %v, %v; want %v", got, err, c.want)
			}
		})
	}
}

func TestInBindingNamespace(t *testing.T) {
	namespaced := &meta.RESTMapping{Scope: meta.RESTScopeNamespace}
	clusterScoped := &meta.RESTMapping{Scope: meta.RESTScopeRoot}
	work := func(bindingNamespace string) *workv1alpha1.Work {
		return &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
			workv1alpha1.LabelBindingNamespace: bindingNamespace, workv1alpha1.LabelBindingName: "web"}}}
	}
	cases := []struct {
		name             string
		bindingNamespace string
		obj              *unstructured.Unstructured
		mapping          *meta.RESTMapping
		ok               bool
	}{
		{"same namespace", "team-a", object("apps/v1", "Deployment", "team-a", "web", nil, nil), namespaced, true},
		{"another namespace", "team-a", object("apps/v1", "Deployment", "kube-system", "web", nil, nil), namespaced, false},
		{"cluster-scoped from a namespaced binding", "team-a", object("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", "admin", nil, nil), clusterScoped, false},
		{"a cluster binding places anything", "", object("v1", "Namespace", "", "team-a", nil, nil), clusterScoped, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := inBindingNamespace(work(c.bindingNamespace), c.obj, c.mapping); (err == nil) != c.ok {
				t.Fatalf("inBindingNamespace = %v, want ok=%v", err, c.ok)
			}
		})
	}
}
