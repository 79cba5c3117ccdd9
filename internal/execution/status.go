package execution

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// An agent writes into its Works what its member reports, and a Work must stay far below etcd's object size
// limit (1.5 MiB) whatever the member's objects carry: a manifest reflects at most maxReflectedStatus bytes
// of its object's status, and all of a Work's manifests together at most statusBudget.
const (
	maxReflectedStatus = 16 << 10
	statusBudget       = 256 << 10
)

// statusLimit is how many bytes of status each of a Work's manifests may reflect.
func statusLimit(manifests int) int { return min(maxReflectedStatus, statusBudget/max(manifests, 1)) }

// observe reflects a member object's status (at most limit bytes of it), whether its controllers observed
// its generation, and its health, which is judged from the whole object.
func observe(ms *workv1alpha1.ManifestStatus, out *unstructured.Unstructured, limit int) {
	ms.Status = nil
	meta.RemoveStatusCondition(&ms.Conditions, workv1alpha1.ManifestConditionStatusReflected)
	if status, ok := out.Object["status"].(map[string]any); ok {
		raw, left := reflectStatus(status, limit)
		ms.Status = &runtime.RawExtension{Raw: raw}
		if len(left) > 0 {
			meta.SetStatusCondition(&ms.Conditions, metav1.Condition{Type: workv1alpha1.ManifestConditionStatusReflected, Status: metav1.ConditionFalse,
				Reason: "TooLarge", Message: fmt.Sprintf("the status is larger than the %d bytes a manifest reflects; left out: %s", limit, strings.Join(left, ", "))})
		}
	}
	observed, found, _ := unstructured.NestedInt64(out.Object, "status", "observedGeneration")
	meta.SetStatusCondition(&ms.Conditions, metav1.Condition{Type: workv1alpha1.ManifestConditionObserved, Status: boolStatus(!found || observed >= out.GetGeneration()),
		Reason: "ObservedGeneration", Message: fmt.Sprintf("generation %d, observed %d", out.GetGeneration(), observed)})
	ms.Health = interpreter.Health(out)
}

// reflectStatus encodes status whole when it fits in limit bytes. Otherwise it keeps the top-level fields
// that fit, smallest first (counts, observedGeneration and phases are small; conditions and long lists are
// what grows), and names the fields left out.
func reflectStatus(status map[string]any, limit int) ([]byte, []string) {
	raw, err := json.Marshal(status)
	if err == nil && len(raw) <= limit {
		return raw, nil
	}
	type field struct {
		name string
		size int
	}
	fields := make([]field, 0, len(status))
	for name, value := range status {
		v, err := json.Marshal(value)
		if err != nil {
			continue
		}
		fields = append(fields, field{name, len(name) + len(v) + 4})
	}
	slices.SortFunc(fields, func(a, b field) int { return a.size - b.size })
	kept, left, size := map[string]any{}, []string{}, 2
	for _, f := range fields {
		if size+f.size > limit {
			left = append(left, f.name)
			continue
		}
		kept[f.name], size = status[f.name], size+f.size
	}
	slices.Sort(left)
	raw, _ = json.Marshal(kept)
	return raw, left
}

// setStatus writes the Work's status when it changed.
func (e *Executor) setStatus(ctx context.Context, w *workv1alpha1.Work, statuses []workv1alpha1.ManifestStatus, applied metav1.ConditionStatus, reason, message string) error {
	next := w.Status.DeepCopy()
	next.ManifestStatuses = statuses
	meta.SetStatusCondition(&next.Conditions, metav1.Condition{Type: workv1alpha1.WorkConditionApplied, Status: applied, Reason: reason,
		Message: message, ObservedGeneration: w.Generation})
	_, healthy, _ := summarize(statuses)
	availability := metav1.Condition{Type: workv1alpha1.WorkConditionAvailable, Status: boolStatus(healthy && applied == metav1.ConditionTrue),
		Reason: "Healthy", Message: "every object is healthy", ObservedGeneration: w.Generation}
	if availability.Status != metav1.ConditionTrue {
		availability.Reason, availability.Message = "NotHealthy", "some objects are not healthy yet"
	}
	meta.SetStatusCondition(&next.Conditions, availability)
	if equality.Semantic.DeepEqual(&w.Status, next) {
		return nil
	}
	w.Status = *next
	return e.Hub.Status().Update(ctx, w)
}

// summarize says whether every manifest is applied and healthy, and why not.
func summarize(statuses []workv1alpha1.ManifestStatus) (applied, healthy bool, message string) {
	applied, healthy, message = true, true, fmt.Sprintf("%d objects applied", len(statuses))
	for _, s := range statuses {
		if !s.Applied {
			applied = false
			if c := meta.FindStatusCondition(s.Conditions, workv1alpha1.WorkConditionApplied); c != nil {
				message = c.Message
			}
		}
		healthy = healthy && s.Health == workv1alpha1.ResourceHealthy
	}
	return applied, healthy, message
}

func boolStatus(b bool) metav1.ConditionStatus {
	if b {
		return metav1.ConditionTrue
	}
	return metav1.ConditionFalse
}
