package detector

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestContentChanged(t *testing.T) {
	base := func() *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "web", "resourceVersion": "1", "labels": map[string]any{"app": "web"}},
			"spec":     map[string]any{"replicas": int64(2)},
			"status":   map[string]any{"replicas": int64(0)},
		}}
	}
	for _, tc := range []struct {
		name   string
		change func(u *unstructured.Unstructured)
		want   bool
	}{
		{"status and resourceVersion only", func(u *unstructured.Unstructured) {
			u.Object["status"] = map[string]any{"replicas": int64(2)}
			u.SetResourceVersion("2")
			u.SetManagedFields(nil)
		}, false},
		{"spec", func(u *unstructured.Unstructured) { u.Object["spec"] = map[string]any{"replicas": int64(3)} }, true},
		{"a label", func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"app": "web", "tier": "front"}) }, true},
		{"data of an object without status", func(u *unstructured.Unstructured) { u.Object["data"] = map[string]any{"k": "v"} }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, updated := base(), base()
			tc.change(updated)
			if got := ContentChanged(old, updated); got != tc.want {
				t.Fatalf("ContentChanged = %v, want %v", got, tc.want)
			}
			if old.GetResourceVersion() != "1" || old.Object["status"] == nil {
				t.Fatal("the old object was modified")
			}
		})
	}
}
