package execution

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// TestObserveCapsReflectedStatus: a member object whose status is huge is reflected in at most the
// manifest's share of the Work's budget, keeping its small fields, with a condition that says what was left
// out; a small status is reflected whole, without that condition.
func TestObserveCapsReflectedStatus(t *testing.T) {
	huge := strings.Repeat("x", 64<<10)
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "default", "generation": int64(2)},
		"status": map[string]any{
			"observedGeneration": int64(2), "replicas": int64(3), "readyReplicas": int64(3), "availableReplicas": int64(3),
			"conditions": []any{map[string]any{"type": "Available", "status": "True", "message": huge}},
		},
	}}
	for _, manifests := range []int{1, 100, 10000} {
		limit := statusLimit(manifests)
		ms := workv1alpha1.ManifestStatus{}
		observe(&ms, obj, limit)
		if ms.Status == nil || len(ms.Status.Raw) > limit {
			t.Fatalf("%d manifests: reflected %d bytes, limit %d", manifests, len(ms.Status.Raw), limit)
		}
		if limit*manifests > statusBudget {
			t.Fatalf("%d manifests may reflect %d bytes together, over the budget of %d", manifests, limit*manifests, statusBudget)
		}
		var got map[string]any
		if err := json.Unmarshal(ms.Status.Raw, &got); err != nil {
			t.Fatal(err)
		}
		if _, ok := got["conditions"]; ok {
			t.Fatalf("%d manifests: the oversized conditions were reflected", manifests)
		}
		if manifests <= 100 && got["readyReplicas"] != float64(3) {
			t.Fatalf("%d manifests: readyReplicas not kept: %s", manifests, ms.Status.Raw)
		}
		c := meta.FindStatusCondition(ms.Conditions, workv1alpha1.ManifestConditionStatusReflected)
		if c == nil || c.Status != "False" || !strings.Contains(c.Message, "conditions") {
			t.Fatalf("%d manifests: condition %+v, want StatusReflected=False naming conditions", manifests, c)
		}
	}

	// Once the status is small again it is reflected whole and the condition goes.
	unstructured.RemoveNestedField(obj.Object, "status", "conditions")
	ms := workv1alpha1.ManifestStatus{}
	observe(&ms, obj, statusLimit(100))
	observe(&ms, obj, statusLimit(1))
	if c := meta.FindStatusCondition(ms.Conditions, workv1alpha1.ManifestConditionStatusReflected); c != nil {
		t.Fatalf("condition %+v stays after the status became small", c)
	}
	if !strings.Contains(string(ms.Status.Raw), `"availableReplicas":3`) {
		t.Fatalf("status %s, want it whole", ms.Status.Raw)
	}
}
