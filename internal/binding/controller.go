// Package binding turns a scheduled binding into one Work per target cluster and sums the Works' status back.
// Two reconcilers serve each binding kind, each woken only by what can change its output and each writing
// only what it owns:
//
//   - the render controller ("binding", controller.go and works.go) renders the template, its dependencies and
//     its overrides into the Works, removes the Works of clusters the binding neither targets nor is being
//     evicted from, deletes the Works of a deleted binding, and owns the Overridden condition. It runs when
//     the template's content, the binding's spec, an override policy, a dependency or a target Cluster's
//     labels change, and when someone else changed or deleted one of its Works; never on a Work's status.
//     A template kind with an Expander (expand.go: a HelmRelease) is expanded per cluster after its
//     overrides, and the Work gets what it stands for; the controller owns the Rendered condition then.
//   - the status controller ("binding-status", status.go) sums the Works' status into the binding's
//     aggregatedStatus and its FullyApplied and Healthy conditions, and into the template's own status. It
//     runs when a Work's status changes and when the placement changes.
//
// Both write their conditions by server-side apply under their own field manager, so neither ever copies
// back what the other (or the scheduler, which owns Scheduled) wrote.
//
// A Work carries its binding's labels and UID (AnnotationBindingUID), and a binding's Works are those it
// claims (works.go): a binding deleted and created again takes over the earlier one's Works on the clusters
// it uses and leaves the others alone. The work sweeper ("work-sweeper", sweeper.go) releases every Work in
// a cluster's namespace that no existing owner claims, keeping its member objects, so that no orphan is
// applied forever.
package binding

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"maps"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/detector"
	"github.com/flotilla-io/flotilla/internal/interpreter"
	"github.com/flotilla-io/flotilla/internal/scheme"
	"github.com/flotilla-io/flotilla/internal/shard"
)

// Controller is the render controller: it keeps a binding's Works and its Overridden condition.
type Controller[T workv1alpha1.Binding] struct {
	Client client.Client
	// Reader reads past the cache: a Work this controller created a moment ago may not be cached yet.
	Reader client.Reader
	New    func() T
	// Interpreter revises replicas, leaves out retained fields and lists dependencies, with the
	// customization of the template's kind if any.
	Interpreter *interpreter.Interpreter
	// Templates reads templates and their dependencies, and brings their changes.
	Templates *detector.Templates
	// Recorder records a rollout's waves on the template.
	Recorder events.EventRecorder
	// Now is the clock of rollouts (time.Now when nil).
	Now func() time.Time
	// Shard, with sharding, says which clusters' Works this hub replica renders (nil: every cluster's), and
	// Leading whether it leads: the leader alone renders the bindings decided as a whole (shardedRender).
	Shard   *shard.Group
	Leading func() bool
	// Expanders render the template kinds that stand for other objects (expand.go), by kind.
	Expanders map[schema.GroupKind]Expander

	// namespaced says which templates are this controller's: namespaced ones (ResourceBindings) or not.
	namespaced bool
	written    ownWrites
}

// renderManager is the field manager of what the render controller writes.
var renderManager = workv1alpha1.ControllerFieldManager("binding")

// Setup registers the render controller for both binding kinds. With a shard group it runs on every hub
// replica, each rendering the Works of the clusters it owns (shardedRender).
func Setup(mgr ctrl.Manager, templates *detector.Templates, group *shard.Group, expanders map[schema.GroupKind]Expander) error {
	recorder := mgr.GetEventRecorder("flotilla-rollout")
	leading := group.Leading(mgr.Elected())
	if err := setup(mgr, "binding", &Controller[*workv1alpha1.ResourceBinding]{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Interpreter: interpreter.New(mgr.GetClient()),
		Templates: templates, Recorder: recorder, New: func() *workv1alpha1.ResourceBinding { return &workv1alpha1.ResourceBinding{} }, namespaced: true,
		Shard: group, Leading: leading, Expanders: expanders}); err != nil {
		return err
	}
	return setup(mgr, "cluster-binding", &Controller[*workv1alpha1.ClusterResourceBinding]{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Interpreter: interpreter.New(mgr.GetClient()),
		Templates: templates, Recorder: recorder, New: func() *workv1alpha1.ClusterResourceBinding { return &workv1alpha1.ClusterResourceBinding{} },
		Shard: group, Leading: leading, Expanders: expanders})
}

func setup[T workv1alpha1.Binding](mgr ctrl.Manager, name string, r *Controller[T]) error {
	// A changed override policy re-renders the bindings it may touch: a cluster policy every binding of this
	// kind, a namespaced one those of its namespace.
	overridden := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		list := listOf(r.namespaced)
		if err := mgr.GetClient().List(ctx, list, client.InNamespace(o.GetNamespace())); err != nil {
			return nil
		}
		items, _ := meta.ExtractList(list)
		out := make([]reconcile.Request, 0, len(items))
		for _, item := range items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(item.(client.Object))})
		}
		return out
	})
	// A Cluster whose labels or spec changed may now be targeted by an override policy, or no longer: the
	// bindings placed there are rendered again.
	placedOn := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		list := listOf(r.namespaced)
		if err := mgr.GetClient().List(ctx, list); err != nil {
			return nil
		}
		items, _ := meta.ExtractList(list)
		var out []reconcile.Request
		for _, item := range items {
			if b, ok := item.(workv1alpha1.Binding); ok && slices.ContainsFunc(b.BindingSpec().Clusters, func(t workv1alpha1.TargetCluster) bool { return t.Name == o.GetName() }) {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(b)})
			}
		}
		return out
	})
	// With sharding, a Work's or Cluster's events reach the replica that owns the cluster, and the leader.
	workCluster := predicate.Or(r.Shard.Filter(func(o client.Object) (string, bool) { return clusterv1alpha1.ClusterOfNamespace(o.GetNamespace()) }),
		shard.WhileLeading(r.leading))
	cluster := predicate.Or(r.Shard.Filter(func(o client.Object) (string, bool) { return o.GetName(), true }), shard.WhileLeading(r.leading))
	b := ctrl.NewControllerManagedBy(mgr).Named(name).WithOptions(r.Shard.Options(controller.Options{})).
		For(r.New(), builder.WithPredicates(renderBindingChanged)).
		Watches(&workv1alpha1.Work{}, workEvents(r.namespaced, 0, renderWakes), builder.WithPredicates(workCluster)).
		Watches(&clusterv1alpha1.Cluster{}, placedOn, builder.WithPredicates(clusterChanged, cluster)).
		WatchesRawSource(r.Shard.Requeue(r.placedOnGained(mgr.GetClient()))).
		WatchesRawSource(r.Shard.OnElected(mgr.Elected(), func(ctx context.Context) ([]reconcile.Request, error) {
			return r.placedOnGained(mgr.GetClient())(ctx, func(string) bool { return true })
		})).
		Watches(&policyv1alpha1.ClusterOverridePolicy{}, overridden).
		Watches(&configv1alpha1.InterpreterCustomization{}, customizationEvents(mgr.GetClient(), r.namespaced, nil)).
		Watches(&configv1alpha1.InterpreterWebhookConfiguration{}, customizationEvents(mgr.GetClient(), r.namespaced, nil))
	if r.namespaced {
		b = b.Watches(&policyv1alpha1.OverridePolicy{}, overridden)
	}
	c, err := b.Build(r)
	if err != nil {
		return err
	}
	// A template's change brings its binding back, and, for ResourceBindings, a changed ConfigMap or Secret
	// reaches the clusters of the workloads that take it along. Both come from the hub's template watches,
	// which also serve the reads (so a reconcile never sees an older object than the change that woke it);
	// they cover the ConfigMaps and Secrets of every namespace with a binding that has propagateDeps.
	if err := detector.WatchTemplates(r.Templates, c, func(schema.GroupVersionKind) handler.TypedEventHandler[*unstructured.Unstructured, reconcile.Request] {
		return templateEvents(r.namespaced)
	}); err != nil {
		return err
	}
	if !r.namespaced {
		return nil
	}
	return detector.WatchTemplates(r.Templates, c, dependencyEvents(mgr.GetClient()))
}

func listOf(namespaced bool) client.ObjectList {
	if namespaced {
		return &workv1alpha1.ResourceBindingList{}
	}
	return &workv1alpha1.ClusterResourceBindingList{}
}

// workWriters is how many Works of one binding are written at once.
const workWriters = 16

// Reconcile renders the binding's Works and removes those it no longer needs.
func (r *Controller[T]) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, err error) {
	b := r.New()
	if err := r.Client.Get(ctx, req.NamespacedName, b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	works := &workv1alpha1.WorkList{}
	if err := r.Client.List(ctx, works, client.MatchingLabels(workLabels(b))); err != nil {
		return ctrl.Result{}, err
	}
	works.Items = claimed(b, works.Items) // an earlier binding's elsewhere are the work sweeper's to release
	if b.GetDeletionTimestamp() != nil {
		return ctrl.Result{}, r.finalize(ctx, b, works.Items, r.Shard.Owns)
	}
	spec := b.BindingSpec()
	if len(spec.Clusters) == 0 && len(works.Items) == 0 {
		return ctrl.Result{}, nil // not placed yet: no Work to write, no override evaluated
	}
	template, err := readTemplate(ctx, r.Templates, spec.Resource)
	if apierrors.IsNotFound(err) {
		return ctrl.Result{}, nil // the binding follows its template through garbage collection
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	deps, err := r.dependencies(ctx, template, spec.PropagateDeps)
	if failed := (*interpreter.Error)(nil); errors.As(err, &failed) {
		// The Works keep their last good version, dependencies and all; the status controller says why.
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	overrides, err := r.overridePolicies(ctx, template.GetNamespace())
	if err != nil {
		return ctrl.Result{}, err
	}
	// Which clusters' Works this replica renders: without sharding all; with sharding those it owns, or all
	// on the leader for a binding decided as a whole, and none elsewhere.
	mine := r.Shard.Owns
	expander := r.Expanders[template.GroupVersionKind().GroupKind()]
	if !shardedRender(b, len(overrides) > 0 || expander != nil) {
		if !r.leading() {
			return ctrl.Result{}, nil
		}
		mine = func(string) bool { return true }
	}
	// A progressive rollout decides which clusters get the template's new revision now; the others keep
	// the stable one.
	var w *wave
	if progressive(spec) && len(spec.Clusters) > 0 {
		if w, err = r.planWave(ctx, b, template, overrides, works.Items); err != nil {
			return ctrl.Result{}, err
		}
	}
	var overrideErrs, expandErrs []string
	// The one write of the binding itself, once every cluster was rendered: the Overridden condition and the
	// rollout's status, when they changed. Without any override policy or rollout there is nothing to say
	// (and a write per binding saved) until one appears.
	defer func() {
		if err == nil {
			err = r.writeStatus(ctx, b, template, len(overrides) > 0, overrideErrs, expander != nil, expandErrs, w)
		}
		if err == nil && len(expandErrs) > 0 && result.RequeueAfter == 0 {
			result.RequeueAfter = expandRetry // a chart source that comes back wakes nothing
		}
	}()
	divided := Division(spec)
	// Works are written a few at a time: one binding may place its template on a thousand clusters.
	var mu sync.Mutex
	writes, writesCtx := errgroup.WithContext(ctx)
	writes.SetLimit(workWriters)
	byCluster := worksByCluster(works.Items)
	for _, target := range spec.Clusters {
		if !mine(target.Name) {
			continue
		}
		writes.Go(func() error {
			from, policies, revision, ok := w.source(target.Name, template, overrides, byCluster[target.Name] != nil)
			if !ok {
				return nil
			}
			m, err := RenderInterpreted(writesCtx, r.Interpreter, from, target, divided)
			if failed := (*interpreter.Error)(nil); errors.As(err, &failed) {
				return nil // this cluster's Work keeps its last good version; the status controller says why
			}
			if err != nil {
				return err
			}
			manifests := []*unstructured.Unstructured{m}
			injectPreservedState(manifests[0], spec.FailoverRecords, target.Name)
			for _, d := range deps {
				manifests = append(manifests, Render(d, target, nil))
			}
			applied, err := r.override(writesCtx, manifests, target.Name, policies)
			if err != nil {
				// Never a half-applied manifest: this cluster's Work keeps its last good version.
				mu.Lock()
				defer mu.Unlock()
				overrideErrs = append(overrideErrs, target.Name+": "+err.Error())
				return nil
			}
			if expander != nil {
				expanded, err := expander.Expand(writesCtx, manifests[0], target.Name)
				if err != nil {
					// As for overrides: this cluster's Work keeps what it had, and Rendered says why.
					mu.Lock()
					defer mu.Unlock()
					expandErrs = append(expandErrs, target.Name+": "+err.Error())
					return nil
				}
				for _, m := range expanded {
					annotations := m.GetAnnotations()
					if annotations == nil {
						annotations = map[string]string{}
					}
					annotations[workv1alpha1.AnnotationExpanded] = template.GetKind()
					m.SetAnnotations(annotations)
				}
				manifests = append(expanded, manifests[1:]...)
			}
			return r.ensureWork(writesCtx, b, manifests, applied, target.Name, revision)
		})
	}
	if err := writes.Wait(); err != nil {
		return ctrl.Result{}, err
	}
	for _, w := range unneeded(spec, works.Items) {
		if cluster, ok := clusterv1alpha1.ClusterOfNamespace(w.Namespace); !ok || !mine(cluster) {
			continue
		}
		if err := client.IgnoreNotFound(r.Client.Delete(ctx, w)); err != nil {
			return ctrl.Result{}, err
		}
	}
	if w != nil {
		return ctrl.Result{RequeueAfter: w.decision.RequeueAfter}, nil
	}
	return ctrl.Result{}, nil
}

// writeStatus applies the render controller's part of the binding's status when it changed: the Overridden
// condition (once any override policy exists) and a progressive rollout's status and conditions (removed
// again when the policy stops rolling out in waves).
func (r *Controller[T]) writeStatus(ctx context.Context, b T, template *unstructured.Unstructured, overridden bool, overrideErrs []string,
	expanded bool, expandErrs []string, w *wave) error {
	// `undo --all-at-once` is for one rollout: once its revision runs everywhere, a later return to the same
	// content by an ordinary edit rolls out in waves again.
	if w != nil && w.decision.Complete && b.GetAnnotations()[workv1alpha1.AnnotationRolloutAllAtOnce] == w.targetHash {
		patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"annotations":{%q:null}}}`, workv1alpha1.AnnotationRolloutAllAtOnce))
		if err := client.IgnoreNotFound(r.Client.Patch(ctx, b, patch, client.FieldOwner(renderManager))); err != nil {
			return err
		}
	}
	status := b.BindingStatus()
	var want []metav1.Condition
	if overridden || meta.FindStatusCondition(status.Conditions, workv1alpha1.ConditionOverridden) != nil {
		slices.Sort(overrideErrs)
		want = append(want, overriddenCondition(b.GetGeneration(), overrideErrs))
	}
	if expanded {
		slices.Sort(expandErrs)
		want = append(want, renderedCondition(b.GetGeneration(), expandErrs))
	}
	owned := &ownedConditionsStatus{}
	if w != nil {
		paused := b.GetAnnotations()[workv1alpha1.AnnotationRolloutPaused] == "true"
		want = append(want, rolloutConditions(b.GetGeneration(), w.decision, paused)...)
		owned.Rollout = &w.decision.Status
	}
	hadRollout := status.Rollout != nil || meta.FindStatusCondition(status.Conditions, workv1alpha1.ConditionRolloutComplete) != nil
	if len(want) == 0 && !hadRollout {
		return nil
	}
	c, same := ownedConditions(status.Conditions, want...)
	if same && sameRollout(status.Rollout, owned.Rollout) && (w != nil || !hadRollout) {
		return nil
	}
	owned.Conditions = c
	wasFailed := meta.IsStatusConditionTrue(status.Conditions, workv1alpha1.ConditionRolloutFailed)
	if err := scheme.ApplyStatus(ctx, r.Client, b, renderManager, owned); err != nil {
		return err
	}
	if w != nil {
		r.recordWave(template, status.Rollout, wasFailed, w.decision)
	}
	return nil
}

// leading says whether this replica leads; without sharding the controller runs on the leader alone.
func (r *Controller[T]) leading() bool {
	return r.Leading == nil || r.Leading()
}

// shardedRender says whether the replicas of a sharded hub render b's Works each for the clusters it owns.
// Not when b is decided as a whole: a progressive rollout picks the clusters of each wave from all of them,
// and the Overridden condition (written once override policies exist, and kept) sums every cluster's
// override errors; the leader renders those bindings on every cluster. The rest, which write nothing to the
// binding, are divided. Replicas whose caches disagree for a moment may both render a Work: the later write
// of a stale render changes its spec, which wakes the owner (and the leader), who renders it again.
func shardedRender(b workv1alpha1.Binding, overridden bool) bool {
	status := b.BindingStatus()
	return !overridden && !progressive(b.BindingSpec()) && status.Rollout == nil &&
		meta.FindStatusCondition(status.Conditions, workv1alpha1.ConditionOverridden) == nil &&
		meta.FindStatusCondition(status.Conditions, workv1alpha1.ConditionRolloutComplete) == nil
}

// placedOnGained lists the bindings with a Work on, or placed on or being evicted from, a cluster gained
// says this replica just gained: their Works there are its to render now.
func (r *Controller[T]) placedOnGained(c client.Reader) func(context.Context, func(string) bool) ([]reconcile.Request, error) {
	return func(ctx context.Context, gained func(string) bool) ([]reconcile.Request, error) {
		seen := map[reconcile.Request]bool{}
		list := listOf(r.namespaced)
		if err := c.List(ctx, list); err != nil {
			return nil, err
		}
		items, _ := meta.ExtractList(list)
		for _, item := range items {
			b, ok := item.(workv1alpha1.Binding)
			if !ok {
				continue
			}
			spec := b.BindingSpec()
			if slices.ContainsFunc(spec.Clusters, func(t workv1alpha1.TargetCluster) bool { return gained(t.Name) }) ||
				slices.ContainsFunc(spec.GracefulEvictionTasks, func(t workv1alpha1.GracefulEvictionTask) bool { return gained(t.FromCluster) }) {
				seen[reconcile.Request{NamespacedName: client.ObjectKeyFromObject(b)}] = true
			}
		}
		works := &workv1alpha1.WorkList{}
		if err := c.List(ctx, works); err != nil {
			return nil, err
		}
		for i := range works.Items {
			cluster, ok := clusterv1alpha1.ClusterOfNamespace(works.Items[i].Namespace)
			if req, isBinding := bindingOf(&works.Items[i], r.namespaced); ok && isBinding && gained(cluster) {
				seen[req] = true
			}
		}
		return slices.Collect(maps.Keys(seen)), nil
	}
}

func (r *Controller[T]) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// unneeded returns the Works of clusters the binding neither targets nor is being evicted from. The Work of
// a cluster being evicted stays until the scheduler, which owns the eviction tasks, drops the task (once the
// new placement is healthy or the grace period passed).
func unneeded(spec *workv1alpha1.ResourceBindingSpec, works []workv1alpha1.Work) []*workv1alpha1.Work {
	var out []*workv1alpha1.Work
	for i := range works {
		if !wants(spec, works[i].Namespace) {
			out = append(out, &works[i])
		}
	}
	return out
}

// wants says whether a binding needs a Work in a cluster's namespace: it targets the cluster or is being
// evicted from it.
func wants(spec *workv1alpha1.ResourceBindingSpec, namespace string) bool {
	in := func(cluster string) bool { return clusterv1alpha1.ClusterNamespace(cluster) == namespace }
	return slices.ContainsFunc(spec.Clusters, func(t workv1alpha1.TargetCluster) bool { return in(t.Name) }) ||
		slices.ContainsFunc(spec.GracefulEvictionTasks, func(t workv1alpha1.GracefulEvictionTask) bool { return in(t.FromCluster) })
}

// ownedConditionsStatus is the part of a binding's status the render controller applies.
type ownedConditionsStatus struct {
	Conditions []metav1.Condition          `json:"conditions"`
	Rollout    *workv1alpha1.RolloutStatus `json:"rollout,omitempty"`
}
