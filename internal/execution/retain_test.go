package execution

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

func deployment(labels map[string]string, replicas any) *unstructured.Unstructured {
	d := object("apps/v1", "Deployment", "app", "web", labels, nil)
	if replicas != nil {
		_ = unstructured.SetNestedField(d.Object, replicas, "spec", "replicas")
	}
	_ = unstructured.SetNestedField(d.Object, "nginx", "spec", "template", "spec", "containers", "image")
	return d
}

// TestRetainLabelled: the retain label, Flotilla's or Karmada's, set to "true" keeps spec.replicas in the
// member; any other value, or no label, keeps nothing.
func TestRetainLabelled(t *testing.T) {
	cases := []struct {
		labels map[string]string
		want   []fieldPath
	}{
		{labels: nil},
		{labels: map[string]string{workv1alpha1.LabelRetainReplicas: "true"}, want: []fieldPath{replicasPath}},
		{labels: map[string]string{workv1alpha1.LabelKarmadaRetainReplicas: "true"}, want: []fieldPath{replicasPath}},
		{labels: map[string]string{workv1alpha1.LabelRetainReplicas: "false"}},
		{labels: map[string]string{workv1alpha1.LabelRetainReplicas: "yes"}},
	}
	for _, c := range cases {
		got := retainLabelled(deployment(c.labels, int64(2)))
		if !slices.EqualFunc(got, c.want, func(a, b fieldPath) bool { return slices.Equal(a, b) }) {
			t.Errorf("labels %v: retained %v, want %v", c.labels, got, c.want)
		}
	}
}

// TestLeaveOut is the manifest pruning: a retained field the member object has is left out of the applied
// manifest, the rest of the manifest stays; a field the member lacks (or no member object) is applied
// from the template, as the starting value.
func TestLeaveOut(t *testing.T) {
	cases := []struct {
		name         string
		existing     *unstructured.Unstructured
		wantReplicas bool
		wantLeftOut  int
	}{
		{name: "member has the field", existing: deployment(nil, int64(7)), wantLeftOut: 1},
		{name: "member lacks the field", existing: deployment(nil, nil), wantReplicas: true},
		{name: "no member object", wantReplicas: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			obj := deployment(nil, int64(2))
			got := leaveOut(obj, c.existing, []fieldPath{replicasPath})
			if len(got) != c.wantLeftOut {
				t.Errorf("left out %v, want %d fields", got, c.wantLeftOut)
			}
			replicas, has, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
			if has != c.wantReplicas || (has && replicas != 2) {
				t.Errorf("applied manifest has replicas %v (%d), want %v", has, replicas, c.wantReplicas)
			}
			if image, _, _ := unstructured.NestedString(obj.Object, "spec", "template", "spec", "containers", "image"); image != "nginx" {
				t.Errorf("the rest of the manifest changed: image %q", image)
			}
		})
	}
}

// TestOwnedOnlyByFlotilla: Flotilla hands a field over before it stops applying it only when its apply is
// the field's one owner in managedFields; an autoscaler's scale, another applier or an update by Flotilla
// itself under another operation count as someone else.
func TestOwnedOnlyByFlotilla(t *testing.T) {
	replicas := `{"f:spec":{"f:replicas":{}}}`
	other := `{"f:spec":{"f:template":{}}}`
	entry := func(manager string, op metav1.ManagedFieldsOperationType, fields, subresource string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, FieldsType: "FieldsV1",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}, Subresource: subresource}
	}
	cases := []struct {
		name    string
		entries []metav1.ManagedFieldsEntry
		want    bool
	}{
		{name: "nobody"},
		{name: "Flotilla alone", entries: []metav1.ManagedFieldsEntry{entry("flotilla", metav1.ManagedFieldsOperationApply, replicas, "")}, want: true},
		{name: "Flotilla, and another field by someone else", want: true, entries: []metav1.ManagedFieldsEntry{
			entry("flotilla", metav1.ManagedFieldsOperationApply, replicas, ""), entry("kubectl", metav1.ManagedFieldsOperationUpdate, other, "")}},
		{name: "Flotilla and an autoscaler's scale", entries: []metav1.ManagedFieldsEntry{
			entry("flotilla", metav1.ManagedFieldsOperationApply, replicas, ""), entry("kube-controller-manager", metav1.ManagedFieldsOperationUpdate, replicas, "scale")}},
		{name: "Flotilla and the retained manager", entries: []metav1.ManagedFieldsEntry{
			entry("flotilla", metav1.ManagedFieldsOperationApply, replicas, ""), entry(RetainedFieldManager, metav1.ManagedFieldsOperationApply, replicas, "")}},
		{name: "only someone else", entries: []metav1.ManagedFieldsEntry{entry("kubectl", metav1.ManagedFieldsOperationUpdate, replicas, "")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := deployment(nil, int64(2))
			d.SetManagedFields(c.entries)
			got, err := ownedOnlyByFlotilla(d, replicasPath)
			if err != nil || got != c.want {
				t.Errorf("ownedOnlyByFlotilla = %v, %v; want %v", got, err, c.want)
			}
		})
	}
}

// TestRetainAnnotated: the fields a customization retains, listed by the hub in the manifest's annotation,
// are kept in the member; empty segments are ignored.
func TestRetainAnnotated(t *testing.T) {
	cases := []struct {
		list string
		want []fieldPath
	}{
		{list: ""},
		{list: "spec.replicas", want: []fieldPath{replicasPath}},
		{list: "spec.replicas, .spec.paused", want: []fieldPath{replicasPath, {"spec", "paused"}}},
		{list: "spec..x,", want: nil},
	}
	for _, c := range cases {
		d := deployment(nil, int64(2))
		d.SetAnnotations(map[string]string{workv1alpha1.AnnotationRetainedFields: c.list})
		got := retainAnnotated(d)
		if !slices.EqualFunc(got, c.want, func(a, b fieldPath) bool { return slices.Equal(a, b) }) {
			t.Errorf("%q: retained %v, want %v", c.list, got, c.want)
		}
	}
}
