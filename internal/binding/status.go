package binding

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/flotilla-io/flotilla/api/apps/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/interpreter"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

// StatusController sums the Works of a binding into its status (aggregatedStatus and the FullyApplied and
// Healthy conditions) and into the template's own status. It writes no Work and no spec.
type StatusController[T workv1alpha1.Binding] struct {
	Client   client.Client
	Recorder events.EventRecorder
	New      func() T
	// Interpreter judges member objects and folds their statuses, with the customization of the template's
	// kind if any.
	Interpreter *interpreter.Interpreter
	// Templates reads templates (detector.Templates).
	Templates client.Reader

	mu sync.Mutex
	// templateStatus remembers the status last written to each template (by UID): the cached template may
	// not show it yet, and writing it again would cost the API server a request for nothing.
	templateStatus map[types.UID]string
	// written remembers when each binding's status was last written: a binding on many clusters is summed
	// again only after aggregationInterval.
	written map[types.NamespacedName]time.Time
	// transientSince remembers since when each binding has had a transient status not written (holdTransient).
	transientSince map[types.NamespacedName]time.Time
	// rendered remembers what was read of the bindings' Works' manifests.
	rendered renderedWorks
}

// statusManager is the field manager of what the status controller writes.
var statusManager = workv1alpha1.ControllerFieldManager("binding-status")

// SetupStatus registers the status controller for both binding kinds. It is woken by its bindings' Works
// (batched, see statusBatchDelay) and by a new placement, not by any status write.
func SetupStatus(mgr ctrl.Manager, templates client.Reader) error {
	recorder := mgr.GetEventRecorder("flotilla-binding")
	if err := setupStatus(mgr, "binding-status", &StatusController[*workv1alpha1.ResourceBinding]{Client: mgr.GetClient(), Recorder: recorder, Interpreter: interpreter.New(mgr.GetClient()),
		Templates: templates, New: func() *workv1alpha1.ResourceBinding { return &workv1alpha1.ResourceBinding{} }}, true); err != nil {
		return err
	}
	return setupStatus(mgr, "cluster-binding-status", &StatusController[*workv1alpha1.ClusterResourceBinding]{Client: mgr.GetClient(), Recorder: recorder, Interpreter: interpreter.New(mgr.GetClient()),
		Templates: templates, New: func() *workv1alpha1.ClusterResourceBinding { return &workv1alpha1.ClusterResourceBinding{} }}, false)
}

func setupStatus[T workv1alpha1.Binding](mgr ctrl.Manager, name string, r *StatusController[T], namespaced bool) error {
	return ctrl.NewControllerManagedBy(mgr).Named(name).For(r.New(), builder.WithPredicates(statusBindingChanged)).
		Watches(&workv1alpha1.Work{}, workEvents(namespaced, statusBatchDelay, statusWakes)).
		Watches(&configv1alpha1.InterpreterCustomization{}, customizationEvents(mgr.GetClient(), namespaced, r.rendered.forgetAll)).
		Watches(&configv1alpha1.InterpreterWebhookConfiguration{}, customizationEvents(mgr.GetClient(), namespaced, r.rendered.forgetAll)).
		Complete(r)
}

// Reconcile aggregates one binding's Works.
func (r *StatusController[T]) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	b := r.New()
	if err := r.Client.Get(ctx, req.NamespacedName, b); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName, "")
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if b.GetDeletionTimestamp() != nil {
		r.forget(req.NamespacedName, b.BindingSpec().Resource.UID)
		return ctrl.Result{}, nil
	}
	if len(b.BindingSpec().Clusters) == 0 && !reported(b.BindingStatus()) {
		return ctrl.Result{}, nil // not placed yet: nothing to sum, and Scheduled says why
	}
	if wait := r.untilDue(req.NamespacedName, len(b.BindingSpec().Clusters), time.Now()); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	template, err := readTemplate(ctx, r.Templates, b.BindingSpec().Resource)
	if apierrors.IsNotFound(err) {
		return ctrl.Result{}, nil // the binding follows its template through garbage collection
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	works := &workv1alpha1.WorkList{}
	if err := r.Client.List(ctx, works, client.MatchingLabels(workLabels(b))); err != nil {
		return ctrl.Result{}, err
	}
	works.Items = claimed(b, works.Items) // an earlier binding's elsewhere, until the work sweeper releases them, say nothing of this one
	interpreted, err := r.interpret(ctx, b, template, works.Items)
	if err != nil {
		return ctrl.Result{}, err
	}
	readReplicas := func(manifest *unstructured.Unstructured) (int32, bool, error) {
		n, _, ok, err := r.Interpreter.Replicas(ctx, manifest)
		return n, ok, err
	}
	if b.BindingSpec().Replicas == 0 {
		readReplicas = nil // nothing to compare: no customization is asked
	}
	renderedOf := func(w *workv1alpha1.Work) rendered { return r.rendered.of(req.NamespacedName, w, readReplicas) }
	sum := aggregate(b.BindingSpec(), b.GetGeneration(), template.GetGeneration(), works.Items, renderedOf)
	r.rendered.keep(req.NamespacedName, works.Items)
	if interpreted != nil {
		sum.interpreted = interpreted
	}
	if wait := untilReported(b, works.Items, sum, time.Now()); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	if wait := r.holdTransient(req.NamespacedName, b, works.Items, sum, time.Now()); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	healthSince(sum.items, b.BindingStatus().AggregatedStatus, metav1.Now())
	observePropagation(template, sum.items, works.Items)
	if err := r.writeStatus(ctx, b, template, sum); err != nil {
		return ctrl.Result{}, err
	}
	schema, err := statusSchema(ctx, r.Client, template)
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.aggregateTemplate(ctx, template, interpreter.Fleet{Members: sum.members, Divided: Division(b.BindingSpec()) != nil,
		CaughtUp: sum.caughtUp, Applied: sum.applied, Healthy: sum.healthy, Now: time.Now(), Schema: schema,
		Rendered: meta.FindStatusCondition(b.BindingStatus().Conditions, appsv1alpha1.ConditionRendered)})
}

// interpret applies the customization of the template's kind to the Works' reports, in place (the status
// each reports and its health), and returns the Interpreted condition: nil when no customization applies
// and the binding has no such condition to clear.
func (r *StatusController[T]) interpret(ctx context.Context, b T, template *unstructured.Unstructured, works []workv1alpha1.Work) (*metav1.Condition, error) {
	interprets, err := r.Interpreter.Interprets(ctx, template.GroupVersionKind())
	if err != nil {
		return nil, err
	}
	if !interprets {
		if meta.FindStatusCondition(b.BindingStatus().Conditions, workv1alpha1.ConditionInterpreted) == nil {
			return nil, nil
		}
		cond := interpretedCondition(b.GetGeneration(), nil)
		cond.Message = "no customization or webhook applies to the template's kind"
		return &cond, nil
	}
	errs, observed, err := interpretationErrors(ctx, r.Interpreter, b.BindingSpec(), template, works)
	if err != nil {
		return nil, err
	}
	for i, o := range observed {
		if o.err != nil || !o.customized {
			continue // reported in errs; the agent's report stands
		}
		ms := &works[i].Status.ManifestStatuses[0]
		if raw, err := json.Marshal(o.status); err == nil {
			ms.Status = &runtime.RawExtension{Raw: raw}
		}
		if o.health != workv1alpha1.ResourceUnknown {
			ms.Health = o.health
		}
	}
	cond := interpretedCondition(b.GetGeneration(), errs)
	return &cond, nil
}

// reported says whether the binding's status holds anything the status controller wrote.
func reported(status *workv1alpha1.ResourceBindingStatus) bool {
	return len(status.AggregatedStatus) > 0 || meta.FindStatusCondition(status.Conditions, workv1alpha1.ConditionFullyApplied) != nil ||
		meta.FindStatusCondition(status.Conditions, workv1alpha1.ConditionHealthy) != nil
}

// waitingGrace is how long a binding placed for the first time goes without a summed status while its Works
// say nothing yet (waiting). In a burst, a Work's agent lists its objects as about to be applied and applies
// them within a second of the Work's creation; summing the binding (and its template) at each of those steps
// wrote both twice more per object for a status that only said "not applied yet". A member that does not
// answer is reported as not applied once the grace is over.
const waitingGrace = 5 * time.Second

// untilReported says how long the binding's first summed status should wait (zero: write it now). It waits
// while the binding has no summed status yet, every Work of it says nothing beyond its objects being about to
// be applied (waiting), a customization failed nowhere, and less than waitingGrace passed since the binding
// was created, since it was scheduled (the scheduler writes the placement first, then the Scheduled
// condition) and since its newest Work was created. Anything the Works report (an apply, a failure), a
// binding already reported, and a placement or Work older than the grace are written at once.
func untilReported[T workv1alpha1.Binding](b T, works []workv1alpha1.Work, sum aggregation, now time.Time) time.Duration {
	status := b.BindingStatus()
	if reported(status) || (sum.interpreted != nil && sum.interpreted.Status != metav1.ConditionTrue) || !waiting(works) {
		return 0
	}
	since := b.GetCreationTimestamp().Time
	if scheduled := meta.FindStatusCondition(status.Conditions, workv1alpha1.ConditionScheduled); scheduled != nil && scheduled.LastTransitionTime.After(since) {
		since = scheduled.LastTransitionTime.Time
	}
	for _, w := range works {
		if w.CreationTimestamp.After(since) {
			since = w.CreationTimestamp.Time
		}
	}
	return max(since.Add(waitingGrace).Sub(now), 0)
}

// waiting says whether the Works report nothing but objects about to be applied: no Work condition yet (the
// executor sets Applied with its first result), and no manifest applied or with an apply's outcome.
func waiting(works []workv1alpha1.Work) bool {
	for _, w := range works {
		if meta.FindStatusCondition(w.Status.Conditions, workv1alpha1.WorkConditionApplied) != nil {
			return false
		}
		for _, ms := range w.Status.ManifestStatuses {
			if c := meta.FindStatusCondition(ms.Conditions, workv1alpha1.WorkConditionApplied); ms.Applied || c != nil && c.Reason != workv1alpha1.ManifestReasonApplying {
				return false
			}
		}
	}
	return true
}

// transientHold is how long a binding's status may go unwritten while it is transient (see transient):
// a burst reaches the members one after another (the push executor applies each member's Works in turn), and
// summing the binding and its template as each member reported wrote both once per member; an update reaches
// the Works before their agents, and summing between the two wrote Healthy lost and then back. Held, the
// reports that come within transientHold of the first are written together. A failure is written at once.
const transientHold = 2 * time.Second

// holdTransient says how long to wait before writing the binding's status (zero: write it now): a transient
// sum is held until transientHold after the controller first saw it.
func (r *StatusController[T]) holdTransient(key types.NamespacedName, b T, works []workv1alpha1.Work, sum aggregation, now time.Time) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !transient(b, works, sum) {
		delete(r.transientSince, key)
		return 0
	}
	if r.transientSince == nil {
		r.transientSince = map[types.NamespacedName]time.Time{}
	}
	since, ok := r.transientSince[key]
	if !ok {
		since, r.transientSince[key] = now, now
	}
	if wait := since.Add(transientHold).Sub(now); wait > 0 {
		return wait
	}
	delete(r.transientSince, key)
	return 0
}

// transient says whether sum is a passing state that a report due within moments ends: partial, or catching
// up.
func transient[T workv1alpha1.Binding](b T, works []workv1alpha1.Work, sum aggregation) bool {
	if sum.interpreted != nil && sum.interpreted.Status != metav1.ConditionTrue {
		return false
	}
	return partial(b.BindingStatus(), works, sum) || catchingUp(b, sum)
}

// catchingUp says whether sum loses Healthy only because Works changed since their agents reported them
// healthy (stale), and nothing else: the binding is what its conditions described (same generation), it
// keeps FullyApplied, and it has no eviction task (the end of an eviction waits for the report of the copy
// that replaces the evicted one, and must not read the old one).
func catchingUp[T workv1alpha1.Binding](b T, sum aggregation) bool {
	conditions := b.BindingStatus().Conditions
	return sum.stale && lost(meta.FindStatusCondition(conditions, sum.healthy.Type), sum.healthy) &&
		!lost(meta.FindStatusCondition(conditions, sum.applied.Type), sum.applied) && len(b.BindingSpec().GracefulEvictionTasks) == 0
}

// partial says whether sum is applied in some target clusters and, in every other, only waits for its Work's
// first result (no Work yet, or one whose objects are about to be applied), with neither FullyApplied nor
// Healthy lost since the status the binding has.
func partial(status *workv1alpha1.ResourceBindingStatus, works []workv1alpha1.Work, sum aggregation) bool {
	if sum.applied.Status == metav1.ConditionTrue ||
		lost(meta.FindStatusCondition(status.Conditions, sum.applied.Type), sum.applied) ||
		lost(meta.FindStatusCondition(status.Conditions, sum.healthy.Type), sum.healthy) {
		return false
	}
	some := false
	byCluster := worksByCluster(works)
	for _, item := range sum.items {
		if item.Applied {
			some = true
			continue
		}
		if w := byCluster[item.ClusterName]; w != nil && !waiting([]workv1alpha1.Work{*w}) {
			return false
		}
	}
	return some
}

// aggregation is what a binding's Works say about it.
type aggregation struct {
	items   []workv1alpha1.AggregatedStatusItem
	applied metav1.Condition // FullyApplied
	healthy metav1.Condition // Healthy
	// interpreted is the Interpreted condition; nil when no customization applies.
	interpreted *metav1.Condition
	// members are the member objects' full status, one per target cluster, for the template's.
	members []interpreter.Member
	// caughtUp is true when every target cluster applied the template's current generation and observed it.
	caughtUp bool
	// stale is true when Healthy is False only for clusters whose Work changed since its agent last reported
	// it, and reported its objects healthy then.
	stale bool
}

// aggregate sums the Works of a binding, one item per target cluster; Works of clusters the binding no
// longer targets (kept for a graceful eviction) count for nothing. renderedOf reads a Work's first manifest
// (rendered).
func aggregate(spec *workv1alpha1.ResourceBindingSpec, generation, templateGeneration int64, works []workv1alpha1.Work,
	renderedOf func(*workv1alpha1.Work) rendered) aggregation {
	sum := aggregation{items: make([]workv1alpha1.AggregatedStatusItem, 0, len(spec.Clusters))}
	placed := len(spec.Clusters) > 0
	applied, healthy, caughtUp, stale := placed, placed, placed, placed
	var notApplied, notHealthy []string
	byCluster := worksByCluster(works)
	for _, target := range spec.Clusters {
		item := workv1alpha1.AggregatedStatusItem{ClusterName: target.Name, Health: workv1alpha1.ResourceUnknown}
		member := interpreter.Member{Cluster: target.Name}
		if w := byCluster[target.Name]; w != nil && w.TemplateStatus() != nil {
			ms := *w.TemplateStatus()
			item.Applied, item.Health, item.Status, item.Unschedulable = ms.Applied, ms.Health, summarize(ms.Status), ms.Unschedulable
			if c := meta.FindStatusCondition(ms.Conditions, workv1alpha1.WorkConditionApplied); c != nil && c.Status != metav1.ConditionTrue {
				item.AppliedMessage = c.Message
			}
			if ms.Status != nil {
				m := map[string]any{}
				// utiljson keeps whole numbers int64, as the unstructured helpers expect.
				if utiljson.Unmarshal(ms.Status.Raw, &m) == nil {
					member.Status = m
				}
			}
			workApplied := meta.FindStatusCondition(w.Status.Conditions, workv1alpha1.WorkConditionApplied)
			caughtUp = caughtUp && ms.Applied && renderedOf(w).templateGeneration == templateGeneration &&
				workApplied != nil && workApplied.ObservedGeneration == w.Generation &&
				meta.IsStatusConditionTrue(ms.Conditions, workv1alpha1.ManifestConditionObserved)
		} else {
			caughtUp = false
		}
		if !item.Applied {
			applied = false
			notApplied = append(notApplied, target.Name)
		}
		if w := byCluster[target.Name]; item.Health != workv1alpha1.ResourceHealthy || !reportsCurrent(spec, target, w, renderedOf) {
			healthy = false
			notHealthy = append(notHealthy, target.Name)
			stale = stale && item.Health == workv1alpha1.ResourceHealthy && changedSinceReport(w)
		}
		sum.items = append(sum.items, item)
		sum.members = append(sum.members, member)
	}
	sum.caughtUp, sum.stale = caughtUp, !healthy && stale
	sum.applied = condition(workv1alpha1.ConditionFullyApplied, applied, generation,
		"Applied", "applied in every target cluster", "NotApplied", "not applied yet in "+clusterv1alpha1.ListInMessage(notApplied))
	sum.healthy = condition(workv1alpha1.ConditionHealthy, healthy, generation,
		"Healthy", "healthy in every target cluster", "NotHealthy", "not healthy yet in "+clusterv1alpha1.ListInMessage(notHealthy))
	return sum
}

// reportsCurrent reports whether a cluster's Work status speaks of what the binding now asks of that cluster:
// the status observed the Work's current generation, and the Work carries the replica count the placement
// gives the cluster. Until then a Healthy report is about the copy before a move (a cluster taking over a
// failed cluster's replicas still reports its old count as healthy), and an eviction must not end on it.
func reportsCurrent(spec *workv1alpha1.ResourceBindingSpec, target workv1alpha1.TargetCluster, w *workv1alpha1.Work,
	renderedOf func(*workv1alpha1.Work) rendered) bool {
	if w == nil || len(w.Spec.Workload.Manifests) == 0 {
		return false
	}
	applied := meta.FindStatusCondition(w.Status.Conditions, workv1alpha1.WorkConditionApplied)
	if applied == nil || applied.ObservedGeneration != w.Generation {
		return false
	}
	if spec.Replicas == 0 {
		return true
	}
	m := renderedOf(w)
	return !m.hasReplicas || m.replicas == target.Replicas
}

// changedSinceReport says whether w's spec changed since its agent last reported it (it reported an
// earlier generation).
func changedSinceReport(w *workv1alpha1.Work) bool {
	if w == nil {
		return false
	}
	applied := meta.FindStatusCondition(w.Status.Conditions, workv1alpha1.WorkConditionApplied)
	return applied != nil && applied.ObservedGeneration < w.Generation
}

// rendered is what a status pass reads of a Work's first manifest: the generation of the template it was
// rendered from (0 when not known) and its replica count (hasReplicas false for a kind without).
type rendered struct {
	templateGeneration int64
	replicas           int32
	hasReplicas        bool
}

// readRendered decodes w's first manifest and reads its replicas with read (none when nil). An undecodable
// manifest has -1 replicas and a customization that fails 0: counts no placement gives, so such a Work
// reports nothing current.
func readRendered(w *workv1alpha1.Work, read func(*unstructured.Unstructured) (int32, bool, error)) (rendered, error) {
	if len(w.Spec.Workload.Manifests) == 0 {
		return rendered{replicas: -1, hasReplicas: true}, nil
	}
	manifest := &unstructured.Unstructured{Object: map[string]any{}}
	if err := utiljson.Unmarshal(w.Spec.Workload.Manifests[0].Raw, &manifest.Object); err != nil {
		return rendered{replicas: -1, hasReplicas: true}, err
	}
	generation, _ := strconv.ParseInt(manifest.GetAnnotations()[workv1alpha1.AnnotationTemplateGeneration], 10, 64)
	if read == nil {
		return rendered{templateGeneration: generation}, nil
	}
	replicas, ok, err := read(manifest)
	if err != nil {
		return rendered{templateGeneration: generation, hasReplicas: true}, err
	}
	return rendered{templateGeneration: generation, replicas: replicas, hasReplicas: ok}, nil
}

// renderedWorks remembers what was read of each Work's first manifest (readRendered), by binding, Work UID
// and generation. (A status pass of a binding on 1,000 clusters decoded 1,000 manifests twice and
// interpreted them; with the garbage that left, a third of the hub's CPU in a fan-out.) A pass keeps only
// the Works it listed; a changed customization forgets all; a failed read is not remembered.
type renderedWorks struct {
	mu        sync.Mutex
	byBinding map[types.NamespacedName]map[types.UID]renderedAt
}

type renderedAt struct {
	generation int64
	// replicasRead says whether the replicas were read: a binding whose template had none (a Deployment
	// scaled to 0) may ask for them at the next pass, of the same Work.
	replicasRead bool
	rendered
}

// of returns what readRendered says of w, from memory when w's generation was read before.
func (c *renderedWorks) of(binding types.NamespacedName, w *workv1alpha1.Work, read func(*unstructured.Unstructured) (int32, bool, error)) rendered {
	c.mu.Lock()
	at, known := c.byBinding[binding][w.UID]
	c.mu.Unlock()
	if known && at.generation == w.Generation && (at.replicasRead || read == nil) {
		return at.rendered
	}
	m, err := readRendered(w, read)
	if err != nil {
		return m
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byBinding == nil {
		c.byBinding = map[types.NamespacedName]map[types.UID]renderedAt{}
	}
	if c.byBinding[binding] == nil {
		c.byBinding[binding] = map[types.UID]renderedAt{}
	}
	c.byBinding[binding][w.UID] = renderedAt{generation: w.Generation, replicasRead: read != nil, rendered: m}
	return m
}

// keep forgets what was read of the binding's Works other than works (none: the binding itself).
func (c *renderedWorks) keep(binding types.NamespacedName, works []workv1alpha1.Work) {
	c.mu.Lock()
	defer c.mu.Unlock()
	read := c.byBinding[binding]
	if len(works) == 0 {
		delete(c.byBinding, binding)
		return
	}
	listed := make(map[types.UID]bool, len(works))
	for i := range works {
		listed[works[i].UID] = true
	}
	maps.DeleteFunc(read, func(uid types.UID, _ renderedAt) bool { return !listed[uid] })
}

func (c *renderedWorks) forgetAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byBinding = nil
}

// healthSince sets each item's health transition time: kept from the previous item of its cluster while the
// health stays the same, now when it changed (or the cluster is new). The time lives in the binding's status
// rather than in memory, so how long a cluster has been unhealthy survives a restart of the hub.
func healthSince(items, previous []workv1alpha1.AggregatedStatusItem, now metav1.Time) {
	for i := range items {
		items[i].HealthTransitionTime = &now
		j := slices.IndexFunc(previous, func(p workv1alpha1.AggregatedStatusItem) bool { return p.ClusterName == items[i].ClusterName })
		if j >= 0 && previous[j].Health == items[i].Health && previous[j].HealthTransitionTime != nil {
			items[i].HealthTransitionTime = previous[j].HealthTransitionTime
		}
	}
}

// ownedStatus is the part of a binding's status the status controller applies.
type ownedStatus struct {
	Conditions       []metav1.Condition                  `json:"conditions"`
	AggregatedStatus []workv1alpha1.AggregatedStatusItem `json:"aggregatedStatus,omitempty"`
}

// writeStatus applies the aggregation to the binding, unless the cached binding already says it, and records
// the transitions a person would want to know of.
func (r *StatusController[T]) writeStatus(ctx context.Context, b T, template *unstructured.Unstructured, sum aggregation) error {
	status := b.BindingStatus()
	want := []metav1.Condition{sum.applied, sum.healthy}
	if sum.interpreted != nil {
		want = append(want, *sum.interpreted)
	}
	conditions, same := ownedConditions(status.Conditions, want...)
	if same && equality.Semantic.DeepEqual(status.AggregatedStatus, sum.items) {
		return nil
	}
	if err := scheme.ApplyStatus(ctx, r.Client, b, statusManager, &ownedStatus{Conditions: conditions, AggregatedStatus: sum.items}); err != nil {
		return err
	}
	r.mu.Lock()
	if r.written == nil {
		r.written = map[types.NamespacedName]time.Time{}
	}
	r.written[client.ObjectKeyFromObject(b)] = time.Now()
	r.mu.Unlock()
	r.recordTransitions(template, status.Conditions, conditions)
	return nil
}

// aggregationInterval is the least time between two status writes of a binding placed on the given number of
// clusters. Summing a binding costs in proportion to its clusters: every Work is read, and the whole
// aggregatedStatus (256 KB at 1,000 clusters) is applied and then decoded by every watcher. During a
// rollout the Works' statuses change on every cluster at once, and a binding on 1,000 clusters summed after
// every batch of them was written about 15 times per rollout, a quarter of the hub's CPU in the fan-out. At
// 2 ms per cluster (2 s at 1,000, never more than 10 s) its summed status trails the members by at most that
// much. A binding on fewer clusters than that spacing's worth of statusBatchDelay is never held.
func aggregationInterval(clusters int) time.Duration {
	interval := min(time.Duration(clusters)*2*time.Millisecond, 10*time.Second)
	if interval <= statusBatchDelay {
		return 0
	}
	return interval
}

// untilDue says how long the binding's next aggregation must wait: zero when it is due.
func (r *StatusController[T]) untilDue(key types.NamespacedName, clusters int, now time.Time) time.Duration {
	r.mu.Lock()
	last, ok := r.written[key]
	r.mu.Unlock()
	if !ok {
		return 0
	}
	return max(last.Add(aggregationInterval(clusters)).Sub(now), 0)
}

// forget drops what the controller remembers of a binding that is gone or going (and of its template, when
// known).
func (r *StatusController[T]) forget(key types.NamespacedName, template types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.written, key)
	delete(r.transientSince, key)
	r.rendered.keep(key, nil)
	if template != "" {
		delete(r.templateStatus, template)
	}
}

// aggregateTemplate writes the fleet's status into the template's status subresource (by merge patch: its
// conditions list is replaced whole, and only the hub's aggregation writes a template's status).
func (r *StatusController[T]) aggregateTemplate(ctx context.Context, template *unstructured.Unstructured, fleet interpreter.Fleet) error {
	want, err := r.Interpreter.AggregateStatus(ctx, template, fleet)
	if failed := (*interpreter.Error)(nil); errors.As(err, &failed) {
		return nil // the template keeps its last status; the Interpreted condition says why
	}
	if err != nil || want == nil {
		return err
	}
	if current, _, _ := unstructured.NestedMap(template.Object, "status"); equality.Semantic.DeepEqual(current, want) {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"status": want})
	if err != nil {
		return err
	}
	r.mu.Lock()
	written := r.templateStatus[template.GetUID()] == string(patch)
	r.mu.Unlock()
	if written {
		return nil // the cache is behind our last write
	}
	if err := r.Client.Status().Patch(ctx, template, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(statusManager)); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.templateStatus == nil {
		r.templateStatus = map[types.UID]string{}
	}
	r.templateStatus[template.GetUID()] = string(patch)
	return nil
}

// recordTransitions puts an event on the template when it stops being applied or healthy everywhere at the
// binding generation it was so at: a loss, which a person would want to know of. Becoming applied or healthy
// is the ordinary course of every template (the conditions say it, with their transition times), and so is a
// new placement (a new binding generation): an event for each cost the hub two writes per object of every
// burst. A new version of the template leaves the binding's generation as it was, so a rollout's pods not
// yet healthy still count as a loss.
func (r *StatusController[T]) recordTransitions(template *unstructured.Unstructured, before, after []metav1.Condition) {
	if r.Recorder == nil {
		return
	}
	for _, c := range after {
		if lost(meta.FindStatusCondition(before, c.Type), c) {
			r.Recorder.Eventf(template, nil, corev1.EventTypeWarning, c.Reason, c.Type, c.Message)
		}
	}
}

// lost reports whether condition c, True before at the generation it describes, is False now at the same one.
func lost(before *metav1.Condition, c metav1.Condition) bool {
	return before != nil && before.Status == metav1.ConditionTrue && c.Status != metav1.ConditionTrue &&
		before.ObservedGeneration == c.ObservedGeneration
}

// Bounds of the per-cluster status summary a binding keeps.
const (
	summaryMaxFields      = 32
	summaryMaxKeyLength   = 64
	summaryMaxValueLength = 256
)

// summarize keeps of a member object's status its top-level numbers, booleans and short strings (replica
// counts, observedGeneration, phase), at most summaryMaxFields of them in key order. The full status stays
// in the Work, where the agent reports it; copying it into the binding for every cluster would multiply
// what agents write into one object (a binding placed on many clusters could outgrow what etcd stores) and
// rewrite the binding whenever a condition's timestamp moves. Nil when nothing is left.
func summarize(status *runtime.RawExtension) *runtime.RawExtension {
	if status == nil {
		return nil
	}
	full := map[string]any{}
	if utiljson.Unmarshal(status.Raw, &full) != nil {
		return nil
	}
	keys := slices.Sorted(maps.Keys(full))
	summary := map[string]any{}
	for _, k := range keys {
		if len(summary) == summaryMaxFields {
			break
		}
		if len(k) > summaryMaxKeyLength {
			continue
		}
		switch v := full[k].(type) {
		case int64, float64, bool:
			summary[k] = v
		case string:
			if len(v) <= summaryMaxValueLength {
				summary[k] = v
			}
		}
	}
	if len(summary) == 0 {
		return nil
	}
	raw, err := json.Marshal(summary)
	if err != nil {
		return nil
	}
	return &runtime.RawExtension{Raw: raw}
}

// worksByCluster indexes a binding's Works by their cluster: a binding on 1,000 clusters looked each one up
// in the list, a million comparisons per status pass.
func worksByCluster(works []workv1alpha1.Work) map[string]*workv1alpha1.Work {
	out := make(map[string]*workv1alpha1.Work, len(works))
	for i := range works {
		if cluster, ok := clusterv1alpha1.ClusterOfNamespace(works[i].Namespace); ok {
			out[cluster] = &works[i]
		}
	}
	return out
}

func condition(t string, ok bool, generation int64, okReason, okMessage, badReason, badMessage string) metav1.Condition {
	c := metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: okReason, Message: okMessage, ObservedGeneration: generation}
	if !ok {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, badReason, badMessage
	}
	return c
}
