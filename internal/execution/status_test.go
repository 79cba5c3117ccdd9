package execution

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

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

// TestProgressOnly: while a Work is not available, changes of its objects' reflected status and health are
// progress, gathered before they are written; a change of what was applied, of a message, or becoming or
// ceasing to be available is written at once.
func TestProgressOnly(t *testing.T) {
	status := func(available metav1.ConditionStatus, applied bool, health workv1alpha1.ResourceHealth, reflected string) *workv1alpha1.WorkStatus {
		ms := workv1alpha1.ManifestStatus{Identifier: workv1alpha1.ResourceIdentifier{Kind: "Deployment", Name: "web"}, Applied: applied, Health: health,
			Status: &runtime.RawExtension{Raw: []byte(reflected)},
			Conditions: []metav1.Condition{{Type: workv1alpha1.WorkConditionApplied, Status: boolStatus(applied), Reason: ReasonApplied},
				{Type: workv1alpha1.ManifestConditionObserved, Status: metav1.ConditionTrue, Reason: "ObservedGeneration", Message: reflected}}}
		s := &workv1alpha1.WorkStatus{ManifestStatuses: []workv1alpha1.ManifestStatus{ms}}
		if available != "" {
			s.Conditions = []metav1.Condition{{Type: workv1alpha1.WorkConditionAvailable, Status: available, Reason: "R"}}
		}
		return s
	}
	rolling := status(metav1.ConditionFalse, true, workv1alpha1.ResourceUnhealthy, `{"replicas":1}`)
	tests := []struct {
		name          string
		current, next *workv1alpha1.WorkStatus
		want          bool
	}{
		{"counts move while unavailable", rolling, status(metav1.ConditionFalse, true, workv1alpha1.ResourceUnhealthy, `{"replicas":1,"updatedReplicas":1}`), true},
		{"no change", rolling, rolling, false},
		{"becomes available", rolling, status(metav1.ConditionTrue, true, workv1alpha1.ResourceHealthy, `{"availableReplicas":1}`), false},
		{"stops being available", status(metav1.ConditionTrue, true, workv1alpha1.ResourceHealthy, `{"availableReplicas":1}`), rolling, false},
		{"first status after the intent", status("", false, workv1alpha1.ResourceUnknown, `{}`), rolling, false},
		{"apply fails", rolling, status(metav1.ConditionFalse, false, workv1alpha1.ResourceUnhealthy, `{"replicas":1}`), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := progressOnly(tt.current, tt.next); got != tt.want {
				t.Fatalf("progressOnly = %v, want %v", got, tt.want)
			}
		})
	}
}
