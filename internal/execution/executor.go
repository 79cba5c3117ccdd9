// Package execution applies Works to member clusters and reflects what happened. The pull agent and the hub's
// push executor both use it; only who holds the member client differs.
//
// Objects are applied with server-side apply under the field manager "flotilla", so fields that member-side
// controllers own (an HPA's replicas, say) stay theirs. CRDs go first, then namespaces, then the rest; a
// namespace is created only where something namespaced goes. An object Flotilla did not create is left alone
// unless the Work says conflictResolution: Overwrite. Objects are deleted only when their Work drops them or
// is deleted — never because a member is unreachable.
package execution

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// FieldManager owns the fields Flotilla applies in members.
const FieldManager = "flotilla"

// Condition reasons on Works and manifests.
const (
	ReasonApplied       = "Applied"
	ReasonApplyFailed   = "ApplyFailed"
	ReasonConflictAbort = "ConflictAbort"
	ReasonSuspended     = "Suspended"
)

// Requeue periods: while something is not healthy yet the executor reads it back often; once healthy, now
// and then, to keep the status current. A full apply, which also undoes drift in the member, happens when
// the Work changes and otherwise every driftPeriod: re-applying every Work every 30 s cost 1,000 Works × 10
// members 250 server-side applies a second, more than the members' own controllers.
const (
	progressingPeriod = 500 * time.Millisecond
	steadyPeriod      = 30 * time.Second
	driftPeriod       = 5 * time.Minute
)

// Executor reconciles Works. MemberFor returns the member a Work namespace belongs to, or nil when this
// executor does not serve it.
type Executor struct {
	Hub       client.Client
	MemberFor func(ctx context.Context, workNamespace string) (*Member, error)

	mu sync.Mutex
	// applied remembers when each Work (by UID) was last applied in full, and at which generation.
	applied map[types.UID]appliedAt
}

type appliedAt struct {
	generation int64
	at         time.Time
	// objectGenerations are the member objects' generations after the apply, by manifest ordinal: a
	// different one later means the object's spec was changed in the member.
	objectGenerations []int64
	// drift is when, after at, the next full apply is due.
	drift time.Duration
}

// Reconcile applies one Work.
func (e *Executor) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	w := &workv1alpha1.Work{}
	if err := e.Hub.Get(ctx, req.NamespacedName, w); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	member, err := e.MemberFor(ctx, w.Namespace)
	if err != nil || member == nil {
		// An unreachable member keeps what it runs; the Work waits for it.
		return ctrl.Result{}, err
	}
	if w.DeletionTimestamp != nil {
		return ctrl.Result{}, e.finalize(ctx, member, w)
	}
	manifests, err := decode(w)
	if err != nil {
		return ctrl.Result{}, e.setStatus(ctx, w, nil, metav1.ConditionFalse, ReasonApplyFailed, err.Error())
	}
	if ptr.Deref(w.Spec.SuspendDispatching, false) {
		return ctrl.Result{}, e.setStatus(ctx, w, w.Status.ManifestStatuses, metav1.ConditionFalse, ReasonSuspended, "dispatching is suspended")
	}
	statuses, refreshed := e.refresh(ctx, member, w, manifests)
	generations := make([]int64, len(manifests))
	if !refreshed {
		for _, i := range applyOrder(manifests) {
			ms, generation := e.apply(ctx, member, w, manifests[i], i, previousConditions(w, i))
			statuses, generations[i] = append(statuses, ms), generation
		}
		slices.SortFunc(statuses, func(a, b workv1alpha1.ManifestStatus) int { return a.Identifier.Ordinal - b.Identifier.Ordinal })
		if err := e.prune(ctx, member, w, statuses); err != nil {
			return ctrl.Result{}, err
		}
	}
	applied, healthy, message := summarize(statuses)
	if applied && !refreshed {
		e.rememberApplied(w, generations)
	}
	reason := ReasonApplied
	if !applied {
		reason = ReasonApplyFailed
	}
	if err := e.setStatus(ctx, w, statuses, boolStatus(applied), reason, message); err != nil {
		return ctrl.Result{}, err
	}
	if !healthy {
		return ctrl.Result{RequeueAfter: progressingPeriod}, nil
	}
	return ctrl.Result{RequeueAfter: steadyPeriod}, nil
}

func decode(w *workv1alpha1.Work) ([]*unstructured.Unstructured, error) {
	out := make([]*unstructured.Unstructured, len(w.Spec.Workload.Manifests))
	for i, m := range w.Spec.Workload.Manifests {
		out[i] = &unstructured.Unstructured{}
		if err := out[i].UnmarshalJSON(m.Raw); err != nil {
			return nil, fmt.Errorf("manifest %d: %w", i, err)
		}
	}
	return out, nil
}

// applyOrder lists manifest indexes with CRDs first, then namespaces, then everything else.
func applyOrder(manifests []*unstructured.Unstructured) []int {
	rank := func(u *unstructured.Unstructured) int {
		switch u.GroupVersionKind().GroupKind() {
		case schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}:
			return 0
		case schema.GroupKind{Kind: "Namespace"}:
			return 1
		}
		return 2
	}
	order := make([]int, len(manifests))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return rank(manifests[a]) - rank(manifests[b]) })
	return order
}

// previousConditions returns a copy of the conditions last reported for manifest ordinal, so unchanged
// conditions keep their transition times and an unchanged Work is not written again.
func previousConditions(w *workv1alpha1.Work, ordinal int) []metav1.Condition {
	for _, s := range w.Status.ManifestStatuses {
		if s.Identifier.Ordinal == ordinal {
			return slices.Clone(s.Conditions)
		}
	}
	return nil
}

func workRef(w *workv1alpha1.Work) string { return w.Namespace + "/" + w.Name }

// refresh reads the Work's objects back from the member instead of applying them again, when everything was
// applied at this generation less than driftPeriod ago (a little less for some Works, so that their full
// applies spread out): status is followed with one GET per object rather than a server-side apply. It
// reports false when a full apply is due.
func (e *Executor) refresh(ctx context.Context, m *Member, w *workv1alpha1.Work, manifests []*unstructured.Unstructured) ([]workv1alpha1.ManifestStatus, bool) {
	e.mu.Lock()
	last, ok := e.applied[w.UID]
	e.mu.Unlock()
	if !ok || last.generation != w.Generation || time.Since(last.at) >= last.drift || len(w.Status.ManifestStatuses) != len(manifests) {
		return nil, false
	}
	statuses := make([]workv1alpha1.ManifestStatus, len(manifests))
	for i, obj := range manifests {
		ms := w.Status.ManifestStatuses[i]
		ms.Conditions = slices.Clone(ms.Conditions)
		if !ms.Applied || ms.Identifier.Ordinal != i {
			return nil, false
		}
		ri, _, err := m.resource(obj.GroupVersionKind(), obj.GetNamespace())
		if err != nil {
			return nil, false
		}
		out, err := ri.Get(ctx, obj.GetName(), metav1.GetOptions{})
		if err != nil || out.GetGeneration() != last.objectGenerations[i] {
			return nil, false // gone, unreadable, or changed in the member: apply again
		}
		if c := meta.FindStatusCondition(ms.Conditions, workv1alpha1.WorkConditionApplied); c != nil && c.Reason == ReasonApplied {
			observe(&ms, out) // a shared dependency's status belongs to the Work that manages it
		}
		statuses[i] = ms
	}
	return statuses, true
}

func (e *Executor) rememberApplied(w *workv1alpha1.Work, objectGenerations []int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.applied == nil {
		e.applied = map[types.UID]appliedAt{}
	}
	e.applied[w.UID] = appliedAt{generation: w.Generation, at: time.Now(), objectGenerations: objectGenerations,
		drift: driftPeriod - rand.N(driftPeriod/5)}
}

func (e *Executor) forget(w *workv1alpha1.Work) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.applied, w.UID)
}

// observe reflects a member object's status, whether its controllers observed its generation, and its health.
func observe(ms *workv1alpha1.ManifestStatus, out *unstructured.Unstructured) {
	ms.Status = nil
	if status, ok := out.Object["status"]; ok {
		raw, _ := json.Marshal(status)
		ms.Status = &runtime.RawExtension{Raw: raw}
	}
	observed, found, _ := unstructured.NestedInt64(out.Object, "status", "observedGeneration")
	meta.SetStatusCondition(&ms.Conditions, metav1.Condition{Type: workv1alpha1.ManifestConditionObserved, Status: boolStatus(!found || observed >= out.GetGeneration()),
		Reason: "ObservedGeneration", Message: fmt.Sprintf("generation %d, observed %d", out.GetGeneration(), observed)})
	ms.Health = interpreter.Health(out)
}

// apply applies one manifest and reflects the object's status and health. It also returns the object's
// generation in the member.
func (e *Executor) apply(ctx context.Context, m *Member, w *workv1alpha1.Work, obj *unstructured.Unstructured, ordinal int,
	conditions []metav1.Condition) (workv1alpha1.ManifestStatus, int64) {
	gvk := obj.GroupVersionKind()
	ms := workv1alpha1.ManifestStatus{Identifier: workv1alpha1.ResourceIdentifier{
		Ordinal: ordinal, Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName(),
	}, Health: workv1alpha1.ResourceUnknown, Conditions: conditions}
	fail := func(reason string, err error) (workv1alpha1.ManifestStatus, int64) {
		meta.SetStatusCondition(&ms.Conditions, metav1.Condition{Type: workv1alpha1.WorkConditionApplied, Status: metav1.ConditionFalse, Reason: reason, Message: err.Error()})
		return ms, 0
	}
	ri, mapping, err := m.resource(gvk, obj.GetNamespace())
	if err != nil {
		return fail(ReasonApplyFailed, fmt.Errorf("the member does not serve %s: %w", gvk, err))
	}
	ms.Identifier.Resource = mapping.Resource.Resource
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		if err := m.ensureNamespace(ctx, obj.GetNamespace()); err != nil {
			return fail(ReasonApplyFailed, fmt.Errorf("creating namespace %s: %w", obj.GetNamespace(), err))
		}
	}
	existing, err := ri.Get(ctx, obj.GetName(), metav1.GetOptions{})
	if err == nil && obj.GetAnnotations()[workv1alpha1.AnnotationDependency] == "true" &&
		existing.GetLabels()[workv1alpha1.LabelManagedBy] == workv1alpha1.ManagedByValue &&
		existing.GetAnnotations()[workv1alpha1.AnnotationWork] != workRef(w) {
		// A dependency another Work already placed here is shared, not taken over.
		ms.Applied, ms.Health = true, workv1alpha1.ResourceHealthy
		meta.SetStatusCondition(&ms.Conditions, metav1.Condition{Type: workv1alpha1.WorkConditionApplied, Status: metav1.ConditionTrue,
			Reason: "Shared", Message: "managed by Work " + existing.GetAnnotations()[workv1alpha1.AnnotationWork]})
		return ms, existing.GetGeneration()
	}
	if err == nil && existing.GetAnnotations()[workv1alpha1.AnnotationWork] != workRef(w) && w.Spec.ConflictResolution != policyv1alpha1.ConflictOverwrite {
		owner := "Flotilla did not create"
		if other := existing.GetAnnotations()[workv1alpha1.AnnotationWork]; other != "" {
			owner = "Work " + other + " manages"
		}
		return fail(ReasonConflictAbort, fmt.Errorf("%s %s already exists in the member and %s it; conflictResolution: Overwrite adopts it",
			gvk.Kind, client.ObjectKeyFromObject(obj), owner))
	}
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[workv1alpha1.LabelManagedBy] = workv1alpha1.ManagedByValue
	obj.SetLabels(labels)
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[workv1alpha1.AnnotationWork] = workRef(w)
	obj.SetAnnotations(annotations)
	out, err := ri.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if err != nil {
		return fail(ReasonApplyFailed, err)
	}
	ms.Applied = true
	meta.SetStatusCondition(&ms.Conditions, metav1.Condition{Type: workv1alpha1.WorkConditionApplied, Status: metav1.ConditionTrue, Reason: ReasonApplied, Message: "applied"})
	observe(&ms, out)
	return ms, out.GetGeneration()
}

// prune deletes objects the Work applied before but no longer holds.
func (e *Executor) prune(ctx context.Context, m *Member, w *workv1alpha1.Work, current []workv1alpha1.ManifestStatus) error {
	for _, old := range w.Status.ManifestStatuses {
		still := slices.ContainsFunc(current, func(s workv1alpha1.ManifestStatus) bool { return sameObject(s.Identifier, old.Identifier) })
		if !still && old.Applied {
			if err := e.deleteObject(ctx, m, w, old.Identifier); err != nil {
				return err
			}
		}
	}
	return nil
}

func sameObject(a, b workv1alpha1.ResourceIdentifier) bool {
	return a.Group == b.Group && a.Kind == b.Kind && a.Namespace == b.Namespace && a.Name == b.Name
}

// deleteObject deletes a member object this Work applied; an object someone else took over stays.
func (e *Executor) deleteObject(ctx context.Context, m *Member, w *workv1alpha1.Work, id workv1alpha1.ResourceIdentifier) error {
	ri, _, err := m.resource(schema.GroupVersionKind{Group: id.Group, Version: id.Version, Kind: id.Kind}, id.Namespace)
	if err != nil {
		return nil // the kind is gone from the member, and its objects with it
	}
	existing, err := ri.Get(ctx, id.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if existing.GetAnnotations()[workv1alpha1.AnnotationWork] != workRef(w) {
		return nil
	}
	err = ri.Delete(ctx, id.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	return client.IgnoreNotFound(err)
}

// finalize removes a deleted Work's objects from the member (unless it preserves them) and lets it go.
func (e *Executor) finalize(ctx context.Context, m *Member, w *workv1alpha1.Work) error {
	if !controllerutil.ContainsFinalizer(w, workv1alpha1.FinalizerExecution) {
		return nil
	}
	if !ptr.Deref(w.Spec.PreserveResourcesOnDeletion, false) {
		// The manifests as well as the reported statuses: a Work deleted before its status was written
		// (or whose status write lost a race) still owns what it applied. deleteObject only removes
		// objects that carry this Work's annotation.
		ids := make([]workv1alpha1.ResourceIdentifier, 0, len(w.Status.ManifestStatuses)+len(w.Spec.Workload.Manifests))
		for _, s := range w.Status.ManifestStatuses {
			ids = append(ids, s.Identifier)
		}
		if manifests, err := decode(w); err == nil {
			for i, obj := range manifests {
				gvk := obj.GroupVersionKind()
				ids = append(ids, workv1alpha1.ResourceIdentifier{Ordinal: i, Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind,
					Namespace: obj.GetNamespace(), Name: obj.GetName()})
			}
		}
		for _, id := range ids {
			if err := e.deleteObject(ctx, m, w, id); err != nil {
				return err
			}
		}
	}
	controllerutil.RemoveFinalizer(w, workv1alpha1.FinalizerExecution)
	e.forget(w)
	return client.IgnoreNotFound(e.Hub.Update(ctx, w))
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
