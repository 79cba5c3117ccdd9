// Package execution applies Works to member clusters and reflects what happened. The pull agent and the hub's
// push executor both use it; only who holds the member client differs.
//
// Objects are applied with server-side apply under the field manager "flotilla", so fields that member-side
// controllers own (an HPA's replicas, say) stay theirs. CRDs go first, then namespaces, then the rest; a
// namespace is created only where something namespaced goes (again, if it was deleted in the member). An
// object Flotilla did not create is left alone unless the Work says conflictResolution: Overwrite, and is
// then recorded as adopted (apply.go). Objects are deleted only when their Work drops them or is deleted —
// never because a member is unreachable or leaves the hub — and not even then when Flotilla adopted them or
// they are Namespaces, CRDs or PVCs, unless the template opts in (delete.go).
package execution

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// Condition reasons on Works and manifests.
const (
	ReasonApplied       = "Applied"
	ReasonApplyFailed   = "ApplyFailed"
	ReasonConflictAbort = "ConflictAbort"
	ReasonSuspended     = "Suspended"
	// ReasonNamespaceMismatch: a manifest of a namespaced binding would land outside the binding's namespace.
	ReasonNamespaceMismatch = "NamespaceMismatch"
	// ReasonApplying marks an object listed in the status before its first apply.
	ReasonApplying = "Applying"
	// ReasonDeleted on the Applied condition of a deleted Work of a cluster being unjoined with
	// --delete-resources: its member objects were deleted; `flotilla unjoin` waits for it.
	ReasonDeleted = "Deleted"
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
	// Clusters reads the Cluster of a Work being finalized (Hub when nil): an agent may only get its own
	// Cluster, not list and watch them all.
	Clusters client.Reader

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
		// The statuses stay: they list what the Work applied before, for pruning and finalizing.
		return ctrl.Result{}, e.setStatus(ctx, w, w.Status.ManifestStatuses, metav1.ConditionFalse, ReasonApplyFailed, err.Error())
	}
	if ptr.Deref(w.Spec.SuspendDispatching, false) {
		return ctrl.Result{}, e.setStatus(ctx, w, w.Status.ManifestStatuses, metav1.ConditionFalse, ReasonSuspended, "dispatching is suspended")
	}
	statuses, refreshed := e.refresh(ctx, member, w, manifests)
	generations := make([]int64, len(manifests))
	if !refreshed {
		if err := e.recordIntent(ctx, w, manifests); err != nil {
			return ctrl.Result{}, err
		}
		limit := statusLimit(len(manifests))
		for _, i := range applyOrder(manifests) {
			ms, generation := e.apply(ctx, member, w, manifests[i], i, previousConditions(w, manifests[i]), limit)
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

// previousConditions returns a copy of the conditions last reported for the manifest's object, so unchanged
// conditions keep their transition times and an unchanged Work is not written again.
func previousConditions(w *workv1alpha1.Work, obj *unstructured.Unstructured) []metav1.Condition {
	id := identifier(obj, 0)
	for _, s := range w.Status.ManifestStatuses {
		if sameObject(s.Identifier, id) {
			return slices.Clone(s.Conditions)
		}
	}
	return nil
}

// identifier names manifest ordinal and the object it becomes.
func identifier(obj *unstructured.Unstructured, ordinal int) workv1alpha1.ResourceIdentifier {
	gvk := obj.GroupVersionKind()
	return workv1alpha1.ResourceIdentifier{Ordinal: ordinal, Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind,
		Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

func sameObject(a, b workv1alpha1.ResourceIdentifier) bool {
	return a.Group == b.Group && a.Kind == b.Kind && a.Namespace == b.Namespace && a.Name == b.Name
}

// recordIntent lists in the Work's status the objects about to be applied for the first time, before they
// are: pruning and finalizing go by that list (and by the manifests), so no object is ever applied without
// being on it. Were the list written only after the apply, a status write lost to a conflict would leave
// the object behind in the member once the Work dropped it. It costs one status write when a Work gains an
// object, none otherwise.
func (e *Executor) recordIntent(ctx context.Context, w *workv1alpha1.Work, manifests []*unstructured.Unstructured) error {
	statuses := slices.Clone(w.Status.ManifestStatuses)
	for i, obj := range manifests {
		id := identifier(obj, i)
		if slices.ContainsFunc(statuses, func(s workv1alpha1.ManifestStatus) bool { return sameObject(s.Identifier, id) }) {
			continue
		}
		ms := workv1alpha1.ManifestStatus{Identifier: id, Health: workv1alpha1.ResourceUnknown}
		meta.SetStatusCondition(&ms.Conditions, metav1.Condition{Type: workv1alpha1.WorkConditionApplied, Status: metav1.ConditionUnknown,
			Reason: ReasonApplying, Message: "about to be applied"})
		statuses = append(statuses, ms)
	}
	if len(statuses) == len(w.Status.ManifestStatuses) {
		return nil
	}
	w.Status.ManifestStatuses = statuses
	return e.Hub.Status().Update(ctx, w)
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
			observe(&ms, out, statusLimit(len(manifests))) // a shared dependency's status belongs to the Work that manages it
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
