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
		observeObject(&ms, obj, limit)
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
	observeObject(&ms, obj, statusLimit(100))
	observeObject(&ms, obj, statusLimit(1))
	if c := meta.FindStatusCondition(ms.Conditions, workv1alpha1.ManifestConditionStatusReflected); c != nil {
		t.Fatalf("condition %+v stays after the status became small", c)
	}
	if !strings.Contains(string(ms.Status.Raw), `"availableReplicas":3`) {
		t.Fatalf("status %s, want it whole", ms.Status.Raw)
	}
}

// TestProgressOnly: while a Work's objects are applied and not all available, changes of how far they got
// are held before they are written, the Work's first status (and the first after an earlier version's intent
// list) included; becoming or ceasing to be available, a failure, a new generation or other objects are
// written at once.
func TestProgressOnly(t *testing.T) {
	type work struct {
		generation int64
		applied    metav1.ConditionStatus // of the Work; "" for the intent list alone
		available  metav1.ConditionStatus
		name       string
		reflected  string
	}
	status := func(w work) *workv1alpha1.WorkStatus {
		ms := workv1alpha1.ManifestStatus{Identifier: workv1alpha1.ResourceIdentifier{Kind: "Deployment", Name: w.name}, Applied: w.applied == metav1.ConditionTrue,
			Status: &runtime.RawExtension{Raw: []byte(w.reflected)}, Health: workv1alpha1.ResourceUnhealthy}
		s := &workv1alpha1.WorkStatus{ManifestStatuses: []workv1alpha1.ManifestStatus{ms}}
		if w.applied != "" {
			s.Conditions = []metav1.Condition{{Type: workv1alpha1.WorkConditionApplied, Status: w.applied, Reason: "R", ObservedGeneration: w.generation},
				{Type: workv1alpha1.WorkConditionAvailable, Status: w.available, Reason: "R", ObservedGeneration: w.generation}}
		}
		return s
	}
	rolling := work{1, metav1.ConditionTrue, metav1.ConditionFalse, "web", `{"replicas":1}`}
	with := func(edit func(*work)) *workv1alpha1.WorkStatus { w := rolling; edit(&w); return status(w) }
	tests := []struct {
		name          string
		current, next *workv1alpha1.WorkStatus
		want          bool
	}{
		{"counts move while unavailable", status(rolling), with(func(w *work) { w.reflected = `{"replicas":1,"updatedReplicas":1}` }), true},
		{"first status after the intent list", with(func(w *work) { w.applied, w.reflected = "", `{}` }), status(rolling), true},
		{"first status", &workv1alpha1.WorkStatus{}, status(rolling), true},
		{"first status, available", &workv1alpha1.WorkStatus{}, with(func(w *work) { w.available = metav1.ConditionTrue }), false},
		{"first status, failed", &workv1alpha1.WorkStatus{}, with(func(w *work) { w.applied = metav1.ConditionFalse }), false},
		{"no change", status(rolling), status(rolling), false},
		{"becomes available", status(rolling), with(func(w *work) { w.available = metav1.ConditionTrue }), false},
		{"stops being available", with(func(w *work) { w.available = metav1.ConditionTrue }), status(rolling), false},
		{"apply fails", status(rolling), with(func(w *work) { w.applied = metav1.ConditionFalse }), false},
		{"a failure is over", with(func(w *work) { w.applied = metav1.ConditionFalse }), status(rolling), false},
		{"new generation", status(rolling), with(func(w *work) { w.generation = 2 }), false},
		{"other objects", status(rolling), with(func(w *work) { w.name = "api" }), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := progressOnly(tt.current, tt.next); got != tt.want {
				t.Fatalf("progressOnly = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestSummarize: a Work is applied when every object is, healthy when every object is, and a failure's
// message says why; a Work with no objects is applied and healthy.
func TestSummarize(t *testing.T) {
	ok := workv1alpha1.ManifestStatus{Applied: true, Health: workv1alpha1.ResourceHealthy}
	progressing := workv1alpha1.ManifestStatus{Applied: true, Health: workv1alpha1.ResourceUnhealthy}
	refused := workv1alpha1.ManifestStatus{Health: workv1alpha1.ResourceUnknown}
	meta.SetStatusCondition(&refused.Conditions, metav1.Condition{Type: workv1alpha1.WorkConditionApplied, Status: metav1.ConditionFalse,
		Reason: ReasonApplyFailed, Message: `deployments.apps "web" is forbidden`})
	tests := []struct {
		name             string
		statuses         []workv1alpha1.ManifestStatus
		applied, healthy bool
		message          string
	}{
		{"nothing to apply", nil, true, true, "0 objects applied"},
		{"all applied and healthy", []workv1alpha1.ManifestStatus{ok, ok}, true, true, "2 objects applied"},
		{"one still rolling out", []workv1alpha1.ManifestStatus{ok, progressing}, true, false, "2 objects applied"},
		{"one refused", []workv1alpha1.ManifestStatus{ok, refused}, false, false, `deployments.apps "web" is forbidden`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			applied, healthy, message := summarize(tt.statuses)
			if applied != tt.applied || healthy != tt.healthy || message != tt.message {
				t.Fatalf("summarize = %v, %v, %q; want %v, %v, %q", applied, healthy, message, tt.applied, tt.healthy, tt.message)
			}
		})
	}
}
