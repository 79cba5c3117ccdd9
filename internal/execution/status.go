package execution

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

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

// observe reflects what observeObject does, and counts a workload's unschedulable pods.
func (m *Member) observe(ms *workv1alpha1.ManifestStatus, out *unstructured.Unstructured, limit int) {
	observeObject(ms, out, limit)
	ms.Unschedulable = m.unschedulable(out)
}

// observeObject reflects a member object's status (at most limit bytes of it), whether its controllers observed
// its generation, and its health, which is judged from the whole object.
func observeObject(ms *workv1alpha1.ManifestStatus, out *unstructured.Unstructured, limit int) {
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

// progressHold is how long a Work's status may lag its objects while they are rolling out. A Deployment
// going from created to available changes its status four times within a few hundred milliseconds; written
// one by one, that made five writes of its Work. While every object is applied and some are not available
// yet, the status waits up to progressHold for more changes and is written with the last of them; becoming
// or ceasing to be available, a failure, and a new generation are written at once. The first status of a
// Work waits as well. A Deployment that becomes available within progressHold of its apply costs its Work
// one write.
const progressHold = time.Second

// nextStatus is the Work's status with statuses and the Applied and Available conditions they make.
func nextStatus(w *workv1alpha1.Work, statuses []workv1alpha1.ManifestStatus, applied metav1.ConditionStatus, reason, message string) *workv1alpha1.WorkStatus {
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
	return next
}

// setStatus writes the Work's status with statuses when it changed.
func (e *Executor) setStatus(ctx context.Context, w *workv1alpha1.Work, statuses []workv1alpha1.ManifestStatus, applied metav1.ConditionStatus, reason, message string) error {
	return e.writeStatus(ctx, w, nextStatus(w, statuses, applied, reason, message))
}

// writeStatus makes next the Work's status when it differs, by a merge patch that carries the Work's
// resourceVersion: the manifest statuses are one list, written whole, and the precondition keeps a status
// computed from an older Work from replacing a newer one.
func (e *Executor) writeStatus(ctx context.Context, w *workv1alpha1.Work, next *workv1alpha1.WorkStatus) error {
	key := client.ObjectKeyFromObject(w)
	e.mu.Lock()
	delete(e.held, key)
	e.mu.Unlock()
	if equality.Semantic.DeepEqual(&w.Status, next) {
		return nil
	}
	patch := client.MergeFromWithOptions(w.DeepCopy(), client.MergeFromWithOptimisticLock{})
	w.Status = *next
	var opts []client.SubResourcePatchOption
	if e.FieldManager != "" {
		opts = append(opts, client.FieldOwner(e.FieldManager))
	}
	if err := e.Hub.Status().Patch(ctx, w, patch, opts...); err != nil {
		return err
	}
	e.recorded(w, func(id workv1alpha1.ResourceIdentifier) bool {
		return slices.ContainsFunc(next.ManifestStatuses, func(s workv1alpha1.ManifestStatus) bool { return sameObject(s.Identifier, id) })
	})
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.written == nil {
		e.written = map[types.NamespacedName]writtenStatus{}
	}
	e.written[key] = writtenStatus{uid: w.UID, generation: w.Generation, resourceVersion: w.ResourceVersion, status: w.Status.DeepCopy()}
	return nil
}

// writtenStatus is the status the executor last wrote to a Work, and the Work's version after the write.
type writtenStatus struct {
	uid             types.UID
	generation      int64
	resourceVersion string
	status          *workv1alpha1.WorkStatus
}

// catchUp gives w the status last written to it when the cache has not seen that write yet. A member
// object's change is often seen before the hub's watch returns the status the executor just wrote: without
// this, the Work read from the cache did not list its objects as applied yet, and they were applied again.
// The executor is the only writer of a Work's status, so the status it last wrote is the current one as long
// as the spec is the same; were the Work changed otherwise meanwhile, a write's precondition fails
// and Reconcile forgets the written status, so the next attempt reads the cache again.
func (e *Executor) catchUp(w *workv1alpha1.Work) {
	e.mu.Lock()
	last, ok := e.written[client.ObjectKeyFromObject(w)]
	e.mu.Unlock()
	if ok && last.uid == w.UID && last.generation == w.Generation && last.resourceVersion != w.ResourceVersion {
		w.ResourceVersion = last.resourceVersion
		w.Status = *last.status.DeepCopy()
	}
}

func (e *Executor) forgetStatus(key types.NamespacedName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.written, key)
	delete(e.held, key)
}

// heldStatus is a progress-only status not written yet, and since when the Work has one.
type heldStatus struct {
	uid        types.UID
	generation int64
	since      time.Time
	status     *workv1alpha1.WorkStatus
}

// heldStatuses returns the manifest statuses of the Work's held status, newer than those the hub has, or,
// when none is held, the hub's.
func (e *Executor) heldStatuses(w *workv1alpha1.Work) []workv1alpha1.ManifestStatus {
	e.mu.Lock()
	defer e.mu.Unlock()
	if h, ok := e.held[client.ObjectKeyFromObject(w)]; ok && h.uid == w.UID && h.generation == w.Generation {
		return h.status.ManifestStatuses
	}
	return w.Status.ManifestStatuses
}

// holdProgress returns how long to wait before writing next (0: write it now): a progress-only change is
// held until progressHold after the first one the hub has not been told.
func (e *Executor) holdProgress(w *workv1alpha1.Work, next *workv1alpha1.WorkStatus) time.Duration {
	key := client.ObjectKeyFromObject(w)
	e.mu.Lock()
	defer e.mu.Unlock()
	if !progressOnly(&w.Status, next) {
		delete(e.held, key)
		return 0
	}
	now := time.Now()
	h, ok := e.held[key]
	if !ok || h.uid != w.UID || h.generation != w.Generation {
		h = heldStatus{uid: w.UID, generation: w.Generation, since: now}
	}
	h.status = next.DeepCopy()
	if e.held == nil {
		e.held = map[types.NamespacedName]heldStatus{}
	}
	e.held[key] = h
	return max(h.since.Add(progressHold).Sub(now), 0)
}

// progressOnly says whether next, the status of a Work whose objects are all applied and not all available,
// differs from current, the status the hub has, only in how far the objects got: current says nothing yet,
// or that the same objects are about to be applied (as earlier versions wrote before applying), or are
// applied at the same generation and not available either.
func progressOnly(current, next *workv1alpha1.WorkStatus) bool {
	condition := func(s *workv1alpha1.WorkStatus, t string) *metav1.Condition {
		return meta.FindStatusCondition(s.Conditions, t)
	}
	nextApplied, nextAvailable := condition(next, workv1alpha1.WorkConditionApplied), condition(next, workv1alpha1.WorkConditionAvailable)
	if nextApplied == nil || nextApplied.Status != metav1.ConditionTrue || nextAvailable == nil || nextAvailable.Status == metav1.ConditionTrue {
		return false
	}
	if c := condition(current, workv1alpha1.WorkConditionAvailable); c != nil && c.Status == metav1.ConditionTrue {
		return false
	}
	currentApplied := condition(current, workv1alpha1.WorkConditionApplied)
	if currentApplied != nil && (currentApplied.Status == metav1.ConditionFalse || currentApplied.ObservedGeneration != nextApplied.ObservedGeneration) {
		return false
	}
	if currentApplied == nil && len(current.ManifestStatuses) == 0 {
		return true // the Work's first status
	}
	return !equality.Semantic.DeepEqual(current, next) && slices.EqualFunc(current.ManifestStatuses, next.ManifestStatuses,
		func(a, b workv1alpha1.ManifestStatus) bool {
			return a.Identifier.Ordinal == b.Identifier.Ordinal && sameObject(a.Identifier, b.Identifier)
		})
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
