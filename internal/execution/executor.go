// Package execution applies Works to member clusters and reflects what happened. The pull agent and the hub's
// push executor both use it; only who holds the member client differs.
//
// Objects are applied with server-side apply, forced, under the field manager "flotilla": Flotilla owns on a
// member object exactly the fields of the manifest it applies (the rendered template, without the fields the
// hub's API server set; binding.Render) and its managed-by label and work, owner, template-generation and
// adopted annotations, and puts them back when they change there. Fields the member keeps are left out of the
// manifest (retain.go): spec.replicas of a template labelled to retain it and of an object a
// HorizontalPodAutoscaler in the member scales, and the fields an InterpreterCustomization retains, once the
// object exists; a field only Flotilla owned is first handed to the field manager "flotilla-retained", since
// server-side apply removes a field its only owner stops sending. Everything else on the object belongs to
// whoever set it. CRDs go first, then namespaces, then the rest; a namespace is created only where something
// namespaced goes (again, if it was deleted in the member). An object Flotilla did not create is left alone
// unless the Work says conflictResolution: Overwrite, and is then recorded as adopted (apply.go); whether
// Flotilla created an object is told by a mark that names this hub and the Work and fits only that object
// (mark.go). Objects are deleted only when their Work drops them or is deleted — never because a member is
// unreachable or leaves the hub — and not even then when Flotilla adopted them or they are Namespaces, CRDs
// or PVCs, unless the template opts in (delete.go). Objects a deleted Work preserves, or that stay in a
// cluster leaving the hub, lose Flotilla's labels and annotations (release.go).
package execution

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// Condition reasons on Works and manifests.
const (
	ReasonApplied       = "Applied"
	ReasonApplyFailed   = "ApplyFailed"
	ReasonConflictAbort = "ConflictAbort"
	ReasonSuspended     = "Suspended"
	// ReasonApplyConflict: a server-side apply without force (manifestConfigs) met a field another manager owns.
	ReasonApplyConflict = "ApplyConflict"
	// ReasonNotFound: the object of a ReadOnly manifest (manifestConfigs) is not in the member.
	ReasonNotFound = "NotFound"
	// ReasonNamespaceMismatch: a manifest of a namespaced binding would land outside the binding's namespace.
	ReasonNamespaceMismatch = "NamespaceMismatch"
)

// A Work's status follows its objects through watches on what was applied (watch.go), not by reading them
// back on a timer. Every steadyPeriod a Work is looked at again all the same, for the kinds that are not
// watched (their objects are read from the member then). A full apply, which also undoes drift in the
// member, happens when the Work changes and otherwise every driftPeriod: re-applying every Work every 30 s
// cost 1,000 Works × 10 members 250 server-side applies a second, more than the members' own controllers.
const (
	steadyPeriod = 30 * time.Second
	driftPeriod  = 5 * time.Minute
)

// applyRetryBase is how long a Work whose apply failed waits for its next attempt; the wait doubles with each
// failure in a row, up to the Work's resync period (a failure the member resolves later, such as a CRD it
// installs afterwards, is still tried that often). A failed apply used to wait for the resync: in a 100 × 2
// update wave, a Deployment whose apply met a passing error in its member reached it 15 s after all others.
const applyRetryBase = 500 * time.Millisecond

// Executor reconciles Works. MemberFor returns the member a Work namespace belongs to, or nil when this
// executor does not serve it.
type Executor struct {
	Hub       client.Client
	MemberFor func(ctx context.Context, workNamespace string) (*Member, error)
	// Clusters reads the Cluster of a Work being finalized (Hub when nil): an agent may only get its own
	// Cluster, not list and watch them all.
	Clusters client.Reader
	// Works reads a Work live from the hub before the sweep lets go of an object it no longer lists
	// (sweep.go); Hub when nil.
	Works client.Reader
	// FieldManager names the executor in the managedFields of the Work statuses it writes.
	FieldManager string
	// HubID is the ID of the hub whose Works this executor applies (registration.HubID), which its mark on
	// member objects names (mark.go). Empty only for an agent whose hub publishes none (a hub older than the
	// mark): objects are then marked and recognised as earlier versions did.
	HubID string
	// Resync is how often a Work is looked at again when nothing changed (steadyPeriod when zero).
	Resync time.Duration
	// Serves, when set, passes only the events of Works this executor serves, and Requeue queues the Works it
	// comes to serve (the hub's: those of Push clusters its shard owns, push.go); MemberFor still decides.
	Serves  predicate.Predicate
	Requeue []source.Source

	// clusterReads shares the live reads of Clusters (Clusters) among the Works finalized at once.
	clusterReads clusterReads
	// queue is the controller's work queue, once it started: Notify adds to it.
	queue atomic.Pointer[workqueue.TypedRateLimitingInterface[reconcile.Request]]

	mu sync.Mutex
	// applied remembers when each Work (by UID) was last applied in full, and at which generation.
	applied map[types.UID]appliedAt
	// written is the status each Work was last given, held the progress each Work has not written yet
	// (status.go).
	written map[types.NamespacedName]writtenStatus
	held    map[types.NamespacedName]heldStatus
	// unrecorded are the objects applied for each Work that its status does not list yet (noteApplying).
	unrecorded map[types.NamespacedName]unrecordedObjects
	// finalized are the deleted Works (by name, and UID) whose finalizer this executor removed, until the
	// cache shows them gone: a late event (the member objects' own deletion) must not finalize them again.
	finalized map[types.NamespacedName]types.UID
	// retries spaces the attempts of Works whose apply failed (applyRetryBase).
	retries     workqueue.TypedRateLimiter[types.NamespacedName]
	retriesOnce sync.Once
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

// SetupWithManager registers the executor as the controller name. It reconciles a Work when the Work's spec,
// labels or deletion change (not when its own status writes come back) and when an object the Work applied
// changes in the member: give Notify to Member.WatchApplied.
func (e *Executor) SetupWithManager(mgr ctrl.Manager, name string, opts controller.Options) error {
	changed := predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{},
		predicate.Funcs{UpdateFunc: func(u event.UpdateEvent) bool {
			return (u.ObjectOld.GetDeletionTimestamp() == nil) != (u.ObjectNew.GetDeletionTimestamp() == nil)
		}})
	predicates := []predicate.Predicate{changed}
	if e.Serves != nil {
		predicates = append(predicates, e.Serves)
	}
	b := ctrl.NewControllerManagedBy(mgr).Named(name).WithOptions(opts).
		For(&workv1alpha1.Work{}, builder.WithPredicates(predicates...)).
		WatchesRawSource(source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
			e.queue.Store(&q)
			return nil
		}))
	for _, s := range e.Requeue {
		b = b.WatchesRawSource(s)
	}
	return b.Complete(e)
}

// Notify queues a Work whose object changed in the member.
func (e *Executor) Notify(work types.NamespacedName) {
	if q := e.queue.Load(); q != nil {
		(*q).Add(reconcile.Request{NamespacedName: work})
	}
}

// Reconcile applies one Work.
func (e *Executor) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	result, err := e.reconcile(ctx, req)
	if apierrors.IsConflict(err) {
		e.forgetStatus(req.NamespacedName) // the Work changed since the status last written: read it again
	}
	return result, err
}

func (e *Executor) reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	w := &workv1alpha1.Work{}
	if err := e.Hub.Get(ctx, req.NamespacedName, w); err != nil {
		if apierrors.IsNotFound(err) {
			e.forgetStatus(req.NamespacedName)
			e.nextAttempt(req.NamespacedName, true, e.Resync) // forgets its failures
			e.mu.Lock()
			delete(e.finalized, req.NamespacedName)
			delete(e.unrecorded, req.NamespacedName)
			e.mu.Unlock()
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	e.mu.Lock()
	finalized := w.DeletionTimestamp != nil && e.finalized[req.NamespacedName] == w.UID
	e.mu.Unlock()
	if finalized {
		return ctrl.Result{}, nil // the cache is behind the finalizer's removal
	}
	e.catchUp(w)
	member, err := e.MemberFor(ctx, w.Namespace)
	if err != nil || member == nil {
		// An unreachable member keeps what it runs; the Work waits for it.
		return ctrl.Result{}, err
	}
	e.sweepOnce(ctx, member, w.Namespace)
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
	// The statuses a held status (status.go) has for the objects are newer than those the hub has.
	base := e.heldStatuses(w)
	statuses, refreshed := e.refresh(ctx, member, w, base, manifests)
	generations := make([]int64, len(manifests))
	if !refreshed {
		e.noteApplying(w, manifests)
		limit := statusLimit(len(manifests))
		for _, i := range applyOrder(manifests) {
			ms, generation := e.apply(ctx, member, w, manifests[i], i, previousConditions(base, manifests[i]), limit)
			statuses, generations[i] = append(statuses, ms), generation
		}
		slices.SortFunc(statuses, func(a, b workv1alpha1.ManifestStatus) int { return a.Identifier.Ordinal - b.Identifier.Ordinal })
		if err := e.prune(ctx, member, w, statuses); err != nil {
			return ctrl.Result{}, err
		}
	}
	applied, _, message := summarize(statuses)
	if applied && !refreshed {
		e.rememberApplied(w, generations)
	}
	reason := ReasonApplied
	if !applied {
		reason = ReasonApplyFailed
	}
	next := nextStatus(w, statuses, boolStatus(applied), reason, message)
	if wait := e.holdProgress(w, next); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	if err := e.writeStatus(ctx, w, next); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: e.nextAttempt(req.NamespacedName, applied, e.Resync)}, nil
}

// nextAttempt says when to look at a Work again after an apply: after resync (steadyPeriod when zero) when
// it was applied, forgetting its failures; after applyRetryBase, doubled by each failure in a row and at most
// resync, when it was not.
func (e *Executor) nextAttempt(key types.NamespacedName, applied bool, resync time.Duration) time.Duration {
	if resync == 0 {
		resync = steadyPeriod
	}
	e.retriesOnce.Do(func() {
		e.retries = workqueue.NewTypedItemExponentialFailureRateLimiter[types.NamespacedName](applyRetryBase, resync)
	})
	if applied {
		e.retries.Forget(key)
		return resync
	}
	return e.retries.When(key)
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
func previousConditions(statuses []workv1alpha1.ManifestStatus, obj *unstructured.Unstructured) []metav1.Condition {
	id := identifier(obj, 0)
	for _, s := range statuses {
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

// noteApplying remembers the objects about to be applied that the Work's status does not list yet, until a
// status write lists them or they are let go: pruning and finalizing go by the status, these and the
// manifests, so an object whose status write is lost (to a conflict: the Work changed meanwhile, or to an
// unreachable hub) is still let go when the Work drops it. What an executor that stopped before its write
// applied is found in the member by its mark (sweep.go). Earlier versions wrote the list to the Work before
// applying: one more status write for every new Work.
func (e *Executor) noteApplying(w *workv1alpha1.Work, manifests []*unstructured.Unstructured) {
	key := client.ObjectKeyFromObject(w)
	e.mu.Lock()
	defer e.mu.Unlock()
	u := e.unrecorded[key]
	if u.uid != w.UID {
		u = unrecordedObjects{uid: w.UID}
	}
	for i, obj := range manifests {
		id := identifier(obj, i)
		listed := func(s workv1alpha1.ManifestStatus) bool { return sameObject(s.Identifier, id) }
		if slices.ContainsFunc(w.Status.ManifestStatuses, listed) ||
			slices.ContainsFunc(u.ids, func(o workv1alpha1.ResourceIdentifier) bool { return sameObject(o, id) }) {
			continue
		}
		u.ids = append(u.ids, id)
	}
	if len(u.ids) == 0 {
		return
	}
	if e.unrecorded == nil {
		e.unrecorded = map[types.NamespacedName]unrecordedObjects{}
	}
	e.unrecorded[key] = u
}

// unrecordedObjects are the objects an executor applied for a Work (by UID) that the Work's status does not
// list yet.
type unrecordedObjects struct {
	uid types.UID
	ids []workv1alpha1.ResourceIdentifier
}

// owned lists the objects the Work may have applied: those its status lists and those noteApplying
// remembers.
func (e *Executor) owned(w *workv1alpha1.Work) []workv1alpha1.ResourceIdentifier {
	ids := make([]workv1alpha1.ResourceIdentifier, 0, len(w.Status.ManifestStatuses))
	for _, s := range w.Status.ManifestStatuses {
		ids = append(ids, s.Identifier)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if u, ok := e.unrecorded[client.ObjectKeyFromObject(w)]; ok && u.uid == w.UID {
		ids = append(ids, u.ids...)
	}
	return ids
}

// recorded forgets the unrecorded objects the Work's status now lists, or that were let go (listed false).
func (e *Executor) recorded(w *workv1alpha1.Work, listed func(workv1alpha1.ResourceIdentifier) bool) {
	key := client.ObjectKeyFromObject(w)
	e.mu.Lock()
	defer e.mu.Unlock()
	u, ok := e.unrecorded[key]
	if !ok {
		return
	}
	if u.uid == w.UID {
		u.ids = slices.DeleteFunc(u.ids, listed)
	}
	if u.uid != w.UID || len(u.ids) == 0 {
		delete(e.unrecorded, key)
		return
	}
	e.unrecorded[key] = u
}

func workRef(w *workv1alpha1.Work) string { return w.Namespace + "/" + w.Name }

// refresh reads the Work's objects back instead of applying them again, when everything was applied at this
// generation less than driftPeriod ago (a little less for some Works, so that their full applies spread
// out): status is followed from the watch cache, or with one GET per object of a kind not watched, rather
// than a server-side apply. It starts from base, the statuses last known, and reports false when a full
// apply is due.
func (e *Executor) refresh(ctx context.Context, m *Member, w *workv1alpha1.Work, base []workv1alpha1.ManifestStatus,
	manifests []*unstructured.Unstructured) ([]workv1alpha1.ManifestStatus, bool) {
	e.mu.Lock()
	last, ok := e.applied[w.UID]
	e.mu.Unlock()
	if !ok || last.generation != w.Generation || time.Since(last.at) >= last.drift || len(base) != len(manifests) {
		return nil, false
	}
	statuses := make([]workv1alpha1.ManifestStatus, len(manifests))
	for i, obj := range manifests {
		ms := base[i]
		ms.Conditions = slices.Clone(ms.Conditions)
		if !ms.Applied || ms.Identifier.Ordinal != i {
			return nil, false
		}
		id := ms.Identifier
		config := w.Spec.ManifestConfig(id.Group, id.Resource, id.Namespace, id.Name)
		var out *unstructured.Unstructured
		var err error
		if strategyOf(config).kind == workv1alpha1.UpdateReadOnly {
			// Read from the member: the watch on applied objects holds only objects Flotilla marked.
			if _, out, err = m.current(ctx, id); err == nil && out == nil {
				return nil, false
			}
		} else {
			out, err = m.read(ctx, obj)
		}
		if err != nil || out.GetGeneration() != last.objectGenerations[i] {
			return nil, false // gone, unreadable, or changed in the member: apply again
		}
		if c := meta.FindStatusCondition(ms.Conditions, workv1alpha1.WorkConditionApplied); c != nil && c.Reason == ReasonApplied {
			m.observe(&ms, out, statusLimit(len(manifests))) // a shared dependency's status belongs to the Work that manages it
			feedback(&ms, out, config)
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
	delete(e.applied, w.UID)
	delete(e.unrecorded, client.ObjectKeyFromObject(w))
	e.mu.Unlock()
	e.forgetStatus(client.ObjectKeyFromObject(w))
}
