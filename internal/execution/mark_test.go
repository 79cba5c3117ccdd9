package execution

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

const (
	testHub   = "5f0c8a2e-0d3b-4c55-9a8e-2b7f1d6c9e01"
	otherHub  = "0b6e2c1a-9f4d-4e3b-8c7a-6d5e4f3a2b10"
	testWork  = "flotilla-cluster-m1/default.web"
	otherWork = "flotilla-cluster-m1/default.other"
)

func testWorkObject(applied ...objectID) *workv1alpha1.Work {
	w := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: "flotilla-cluster-m1", Name: "default.web"}}
	for _, id := range applied {
		w.Status.ManifestStatuses = append(w.Status.ManifestStatuses, workv1alpha1.ManifestStatus{Applied: true,
			Identifier: workv1alpha1.ResourceIdentifier{Group: id.group, Version: "v1", Kind: id.kind, Namespace: id.namespace, Name: id.name}})
	}
	return w
}

// markedObject is a member object as an executor of hub left it for work (no owner annotation when hub is
// empty: a mark of an earlier version), with extra annotations.
func markedObject(apiVersion, kind, namespace, name, hub, work string, extra map[string]string) *unstructured.Unstructured {
	obj := object(apiVersion, kind, namespace, name, map[string]string{workv1alpha1.LabelManagedBy: workv1alpha1.ManagedByValue},
		map[string]string{workv1alpha1.AnnotationWork: work})
	a := obj.GetAnnotations()
	if hub != "" {
		a[workv1alpha1.AnnotationOwner] = ownerMark(hub, work, idOf(obj))
	}
	maps.Copy(a, extra)
	obj.SetAnnotations(a)
	return obj
}

// copyMark puts the labels and annotations of from onto to, as a member user who copies them would.
func copyMark(from, to *unstructured.Unstructured) *unstructured.Unstructured {
	to.SetLabels(maps.Clone(from.GetLabels()))
	to.SetAnnotations(maps.Clone(from.GetAnnotations()))
	return to
}

// TestOwns is the mark's table: an executor takes an object for its Work's own only when it carries the mark
// this hub makes for that Work on that very object, or an earlier version's mark on the object the Work's
// status records as applied.
func TestOwns(t *testing.T) {
	deployment := objectID{group: "apps", kind: "Deployment", namespace: "default", name: "web"}
	own := markedObject("apps/v1", "Deployment", "default", "web", testHub, testWork, nil)
	cases := []struct {
		name  string
		hubID string
		work  *workv1alpha1.Work
		obj   *unstructured.Unstructured
		want  bool
	}{
		{"its own mark", testHub, testWorkObject(), own, true},
		{"its own mark, read in another version", testHub, testWorkObject(),
			markedObject("apps/v1beta2", "Deployment", "default", "web", testHub, testWork, nil), true},
		{"another hub's mark for a Work of the same name", testHub, testWorkObject(deployment),
			markedObject("apps/v1", "Deployment", "default", "web", otherHub, testWork, nil), false},
		{"another Work's mark", testHub, testWorkObject(),
			markedObject("apps/v1", "Deployment", "default", "web", testHub, otherWork, nil), false},
		{"its mark copied onto an object of another name", testHub, testWorkObject(),
			copyMark(own, object("apps/v1", "Deployment", "default", "web-copy", nil, nil)), false},
		{"its mark copied into another namespace", testHub, testWorkObject(),
			copyMark(own, object("apps/v1", "Deployment", "team-b", "web", nil, nil)), false},
		{"its mark copied onto another kind", testHub, testWorkObject(),
			copyMark(own, object("apps/v1", "StatefulSet", "default", "web", nil, nil)), false},
		{"its mark with the Work annotation changed to another Work", testHub, testWorkObject(),
			markedObject("apps/v1", "Deployment", "default", "web", testHub, testWork, map[string]string{workv1alpha1.AnnotationWork: otherWork}), false},
		{"a mark naming its Work with a forged owner", testHub, testWorkObject(deployment),
			markedObject("apps/v1", "Deployment", "default", "web", "", testWork, map[string]string{workv1alpha1.AnnotationOwner: testHub + "/0123456789abcdef"}), false},
		{"no mark", testHub, testWorkObject(deployment), object("apps/v1", "Deployment", "default", "web", nil, nil), false},
		{"a legacy mark on the object the Work applied", testHub, testWorkObject(deployment),
			markedObject("apps/v1", "Deployment", "default", "web", "", testWork, nil), true},
		{"a legacy mark on an object the Work never applied", testHub, testWorkObject(),
			markedObject("apps/v1", "Deployment", "default", "web", "", testWork, nil), false},
		{"a legacy mark copied onto another object", testHub, testWorkObject(deployment),
			markedObject("apps/v1", "Deployment", "default", "web-copy", "", testWork, nil), false},
		{"a legacy mark of another Work", testHub, testWorkObject(deployment),
			markedObject("apps/v1", "Deployment", "default", "web", "", otherWork, nil), false},
		{"an executor without a hub ID goes by the Work annotation", "", testWorkObject(),
			markedObject("apps/v1", "Deployment", "default", "web", "", testWork, nil), true},
		{"an executor without a hub ID, another Work's object", "", testWorkObject(),
			markedObject("apps/v1", "Deployment", "default", "web", "", otherWork, nil), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := owns(c.hubID, c.work, c.obj); got != c.want {
				t.Fatalf("owns = %v, want %v (annotations %v)", got, c.want, c.obj.GetAnnotations())
			}
		})
	}
}

// TestMark: what the executor applies carries this hub's mark for the object, whatever the manifest carried
// (a template copied from a member object, or written to look like another hub's), and no owner annotation
// without a hub ID.
func TestMark(t *testing.T) {
	id := objectID{kind: "ConfigMap", namespace: "default", name: "c"}
	for _, hubID := range []string{testHub, ""} {
		obj := object("v1", "ConfigMap", "default", "c", nil, map[string]string{workv1alpha1.AnnotationOwner: otherHub + "/0123456789abcdef",
			workv1alpha1.AnnotationWork: otherWork, workv1alpha1.AnnotationRetainedFields: "data"})
		mark(obj, hubID, testWorkObject(), id, false)
		owner, hasOwner := obj.GetAnnotations()[workv1alpha1.AnnotationOwner]
		switch {
		case hubID == "" && hasOwner:
			t.Errorf("without a hub ID: owner annotation %q, want none", owner)
		case hubID != "" && owner != ownerMark(hubID, testWork, id):
			t.Errorf("owner annotation %q, want %q", owner, ownerMark(hubID, testWork, id))
		case hubID != "" && !strings.HasPrefix(owner, hubID+"/"):
			t.Errorf("owner annotation %q does not name the hub", owner)
		}
		if a := obj.GetAnnotations(); a[workv1alpha1.AnnotationWork] != testWork || a[workv1alpha1.AnnotationRetainedFields] != "" {
			t.Errorf("annotations %v", a)
		}
		if !owns(hubID, testWorkObject(), obj) {
			t.Errorf("hub %q does not recognise its own mark", hubID)
		}
	}
}

// TestUnmarkPatch: releasing an object removes every work.flotilla.io/ label and annotation, and nothing else,
// on the object whose mark was checked.
func TestUnmarkPatch(t *testing.T) {
	obj := markedObject("apps/v1", "Deployment", "default", "web", testHub, testWork, map[string]string{
		workv1alpha1.AnnotationTemplateGeneration: "3", workv1alpha1.AnnotationAdopted: "true", "team": "a"})
	obj.SetUID("uid-1")
	labels := obj.GetLabels()
	labels["app"], labels[workv1alpha1.LabelRetainReplicas] = "web", "true"
	obj.SetLabels(labels)
	raw, err := unmarkPatch(obj)
	if err != nil {
		t.Fatal(err)
	}
	var patch struct {
		Metadata struct {
			UID         string             `json:"uid"`
			Labels      map[string]*string `json:"labels"`
			Annotations map[string]*string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &patch); err != nil {
		t.Fatal(err)
	}
	wantLabels := []string{workv1alpha1.LabelManagedBy, workv1alpha1.LabelRetainReplicas}
	wantAnnotations := []string{workv1alpha1.AnnotationWork, workv1alpha1.AnnotationOwner, workv1alpha1.AnnotationTemplateGeneration, workv1alpha1.AnnotationAdopted}
	if patch.Metadata.UID != "uid-1" || len(patch.Metadata.Labels) != len(wantLabels) || len(patch.Metadata.Annotations) != len(wantAnnotations) {
		t.Fatalf("patch %s", raw)
	}
	for _, k := range wantLabels {
		if v, ok := patch.Metadata.Labels[k]; !ok || v != nil {
			t.Errorf("patch %s does not remove label %s", raw, k)
		}
	}
	for _, k := range wantAnnotations {
		if v, ok := patch.Metadata.Annotations[k]; !ok || v != nil {
			t.Errorf("patch %s does not remove annotation %s", raw, k)
		}
	}
	if raw, err := unmarkPatch(object("apps/v1", "Deployment", "default", "web", map[string]string{"app": "web"}, nil)); raw != nil || err != nil {
		t.Fatalf("an unmarked object: patch %s, %v; want none", raw, err)
	}
}
