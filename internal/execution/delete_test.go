package execution

import (
	"testing"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// TestDeletable is the deletion rule table: a Work deletes only what it created (its mark of this hub for
// the object, mark.go), and Namespaces, CRDs, PVCs and adopted objects only with the template's opt-in; an
// adopted Namespace or CRD never.
func TestDeletable(t *testing.T) {
	ours := func(extra ...string) map[string]string {
		a := map[string]string{workv1alpha1.AnnotationWork: testWork}
		for i := 0; i+1 < len(extra); i += 2 {
			a[extra[i]] = extra[i+1]
		}
		return a
	}
	otherHubs := map[string]string{workv1alpha1.AnnotationWork: testWork,
		workv1alpha1.AnnotationOwner: ownerMark(otherHub, testWork, objectID{group: "apps", kind: "Deployment", namespace: "default", name: "x"})}
	adopt, optIn := workv1alpha1.AnnotationAdopted, workv1alpha1.AnnotationDeletionPolicy
	cases := []struct {
		name string
		obj  map[string]string
		kind [2]string // apiVersion, kind
		want bool
	}{
		{"its own Deployment", ours(), [2]string{"apps/v1", "Deployment"}, true},
		{"another Work's Deployment", map[string]string{workv1alpha1.AnnotationWork: otherWork}, [2]string{"apps/v1", "Deployment"}, false},
		{"another hub's Deployment for a Work of the same name", otherHubs, [2]string{"apps/v1", "Deployment"}, false},
		{"a Deployment Flotilla never marked", nil, [2]string{"apps/v1", "Deployment"}, false},
		{"an adopted Deployment", ours(adopt, "true"), [2]string{"apps/v1", "Deployment"}, false},
		{"an adopted Deployment with the opt-in", ours(adopt, "true", optIn, "Delete"), [2]string{"apps/v1", "Deployment"}, true},
		{"a Namespace it created", ours(), [2]string{"v1", "Namespace"}, false},
		{"a Namespace it created, with the opt-in", ours(optIn, "Delete"), [2]string{"v1", "Namespace"}, true},
		{"an adopted Namespace, even with the opt-in", ours(adopt, "true", optIn, "Delete"), [2]string{"v1", "Namespace"}, false},
		{"a CRD it created", ours(), [2]string{"apiextensions.k8s.io/v1", "CustomResourceDefinition"}, false},
		{"an adopted CRD, even with the opt-in", ours(adopt, "true", optIn, "Delete"), [2]string{"apiextensions.k8s.io/v1", "CustomResourceDefinition"}, false},
		{"a PVC it created", ours(workv1alpha1.AnnotationDependency, "true"), [2]string{"v1", "PersistentVolumeClaim"}, false},
		{"a PVC with the opt-in", ours(optIn, "Delete"), [2]string{"v1", "PersistentVolumeClaim"}, true},
		{"a ConfigMap dependency it created", ours(workv1alpha1.AnnotationDependency, "true"), [2]string{"v1", "ConfigMap"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			obj := object(c.kind[0], c.kind[1], "default", "x", nil, c.obj)
			if _, marked := c.obj[workv1alpha1.AnnotationOwner]; !marked && c.obj[workv1alpha1.AnnotationWork] != "" {
				a := obj.GetAnnotations()
				a[workv1alpha1.AnnotationOwner] = ownerMark(testHub, c.obj[workv1alpha1.AnnotationWork], idOf(obj))
				obj.SetAnnotations(a)
			}
			if got := deletable(testHub, testWorkObject(), obj); got != c.want {
				t.Fatalf("deletable = %v, want %v", got, c.want)
			}
		})
	}
}
