// Package binding turns a scheduled binding into one Work per target cluster, removes the Works of clusters
// no longer targeted, and aggregates the Works' status into the binding and into the template's own status.
package binding

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

type binding interface {
	client.Object
	workv1alpha1.Object
}

// Controller keeps a binding's Works and status.
type Controller[T binding] struct {
	Client   client.Client
	Recorder events.EventRecorder
	New      func() T

	mu sync.Mutex
	// templateStatus remembers the status last written to each template (by UID): the cached template may
	// not show it yet, and writing it again would cost the API server a request for nothing.
	templateStatus map[types.UID]string
}

// Setup registers the controller for both binding kinds; a change of one of its Works brings the binding
// back.
func Setup(mgr ctrl.Manager) error {
	recorder := mgr.GetEventRecorder("flotilla-binding")
	if err := setup(mgr, "binding", &Controller[*workv1alpha1.ResourceBinding]{Client: mgr.GetClient(), Recorder: recorder,
		New: func() *workv1alpha1.ResourceBinding { return &workv1alpha1.ResourceBinding{} }}, true); err != nil {
		return err
	}
	return setup(mgr, "cluster-binding", &Controller[*workv1alpha1.ClusterResourceBinding]{Client: mgr.GetClient(), Recorder: recorder,
		New: func() *workv1alpha1.ClusterResourceBinding { return &workv1alpha1.ClusterResourceBinding{} }}, false)
}

func setup[T binding](mgr ctrl.Manager, name string, r *Controller[T], namespaced bool) error {
	bindingOf := func(o client.Object) (reconcile.Request, bool) {
		l := o.GetLabels()
		if l[workv1alpha1.LabelBindingName] == "" || (l[workv1alpha1.LabelBindingNamespace] != "") != namespaced {
			return reconcile.Request{}, false
		}
		return reconcile.Request{NamespacedName: client.ObjectKey{Namespace: l[workv1alpha1.LabelBindingNamespace], Name: l[workv1alpha1.LabelBindingName]}}, true
	}
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	workToBinding := handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q queue) {
			if req, ok := bindingOf(e.Object); ok {
				q.Add(req)
			}
		},
		// A Work's status changes several times as its workload rolls out, on every cluster at once: the
		// binding waits a moment so that one reconcile (one status write) takes in several of them.
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q queue) {
			if req, ok := bindingOf(e.ObjectNew); ok {
				q.AddAfter(req, statusBatchDelay)
			}
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q queue) {
			if req, ok := bindingOf(e.Object); ok {
				q.Add(req)
			}
		},
	}
	// A changed override policy re-renders the bindings it may touch: a cluster policy every binding of this
	// kind, a namespaced one those of its namespace.
	overridden := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		list := listOf(namespaced)
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
	// The binding's own status changes (written here and by the scheduler) are no reason to render again.
	bindingChanged := predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld, e.ObjectNew
		return o.GetGeneration() != n.GetGeneration() || (o.GetDeletionTimestamp() == nil) != (n.GetDeletionTimestamp() == nil) ||
			!maps.Equal(o.GetAnnotations(), n.GetAnnotations()) || !slices.Equal(o.GetFinalizers(), n.GetFinalizers())
	}}
	b := ctrl.NewControllerManagedBy(mgr).Named(name).For(r.New(), builder.WithPredicates(bindingChanged)).
		Watches(&workv1alpha1.Work{}, workToBinding).
		Watches(&policyv1alpha1.ClusterOverridePolicy{}, overridden)
	if namespaced {
		b = b.Watches(&policyv1alpha1.OverridePolicy{}, overridden)
	}
	if namespaced {
		// A changed ConfigMap or Secret reaches the clusters of the workloads that take it along.
		dependents := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			list := &workv1alpha1.ResourceBindingList{}
			if err := mgr.GetClient().List(ctx, list, client.InNamespace(o.GetNamespace())); err != nil {
				return nil
			}
			var out []reconcile.Request
			for _, b := range list.Items {
				if b.Spec.PropagateDeps {
					out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&b)})
				}
			}
			return out
		})
		// Watched as unstructured objects: dependencies are read that way, so the event and the read come
		// from one informer and a reconcile never sees an older ConfigMap than the change that woke it.
		for _, kind := range []string{"ConfigMap", "Secret"} {
			obj := &unstructured.Unstructured{}
			obj.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(kind))
			b = b.Watches(obj, dependents)
		}
	}
	return b.Complete(r)
}

func listOf(namespaced bool) client.ObjectList {
	if namespaced {
		return &workv1alpha1.ResourceBindingList{}
	}
	return &workv1alpha1.ClusterResourceBindingList{}
}

// WorkName is the name of a binding's Work in every cluster namespace: NAMESPACE.NAME for a namespaced
// binding (dots never occur in namespaces), NAME for a cluster binding.
func WorkName(b client.Object) string {
	if b.GetNamespace() == "" {
		return b.GetName()
	}
	return b.GetNamespace() + "." + b.GetName()
}

// workWriters is how many Works of one binding are written at once.
const workWriters = 16

// statusBatchDelay is how long a binding waits after a change of one of its Works' status.
const statusBatchDelay = 100 * time.Millisecond

func workLabels(b client.Object) map[string]string {
	return map[string]string{workv1alpha1.LabelBindingNamespace: b.GetNamespace(), workv1alpha1.LabelBindingName: b.GetName()}
}

// Reconcile renders the binding's Works and aggregates their status.
func (r *Controller[T]) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	b := r.New()
	if err := r.Client.Get(ctx, req.NamespacedName, b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	works := &workv1alpha1.WorkList{}
	if err := r.Client.List(ctx, works, client.MatchingLabels(workLabels(b))); err != nil {
		return ctrl.Result{}, err
	}
	if b.GetDeletionTimestamp() != nil {
		return ctrl.Result{}, r.finalize(ctx, b, works.Items)
	}
	spec := b.BindingSpec()
	template, err := r.template(ctx, spec.Resource)
	if apierrors.IsNotFound(err) {
		return ctrl.Result{}, nil // the binding follows its template through garbage collection
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	divided := spec.Placement != nil && spec.Placement.ReplicaScheduling != nil &&
		spec.Placement.ReplicaScheduling.ReplicaSchedulingType == policyv1alpha1.ReplicaSchedulingDivided
	deps, err := r.dependencies(ctx, template, spec.PropagateDeps)
	if err != nil {
		return ctrl.Result{}, err
	}
	overrides, err := r.overridePolicies(ctx, template.GetNamespace())
	if err != nil {
		return ctrl.Result{}, err
	}
	// Works are written a few at a time: one binding may place its template on a thousand clusters.
	var mu sync.Mutex
	var overrideErrs []string
	writes, writesCtx := errgroup.WithContext(ctx)
	writes.SetLimit(workWriters)
	for _, target := range spec.Clusters {
		writes.Go(func() error {
			manifests := []*unstructured.Unstructured{Render(template, target, divided)}
			for _, d := range deps {
				manifests = append(manifests, Render(d, target, false))
			}
			applied, err := r.override(writesCtx, manifests, target.Name, overrides)
			if err != nil {
				// Never a half-applied manifest: this cluster's Work keeps its last good version.
				mu.Lock()
				defer mu.Unlock()
				overrideErrs = append(overrideErrs, target.Name+": "+err.Error())
				return nil
			}
			return r.ensureWork(writesCtx, b, manifests, applied, target.Name)
		})
	}
	if err := writes.Wait(); err != nil {
		return ctrl.Result{}, err
	}
	slices.Sort(overrideErrs)
	setOverridden(b.BindingStatus(), b.GetGeneration(), overrideErrs)
	inNamespace := func(w *workv1alpha1.Work) func(string) bool {
		return func(cluster string) bool { return clusterv1alpha1.ClusterNamespace(cluster) == w.Namespace }
	}
	for i := range works.Items {
		w := &works.Items[i]
		targeted := slices.ContainsFunc(spec.Clusters, func(t workv1alpha1.TargetCluster) bool { return inNamespace(w)(t.Name) })
		evicting := slices.ContainsFunc(spec.GracefulEvictionTasks, func(t workv1alpha1.GracefulEvictionTask) bool { return inNamespace(w)(t.FromCluster) })
		if !targeted && !evicting {
			if err := client.IgnoreNotFound(r.Client.Delete(ctx, w)); err != nil {
				return ctrl.Result{}, err
			}
		}
	}
	if err := r.aggregate(ctx, b, template, works.Items); err != nil {
		return ctrl.Result{}, err
	}
	return r.finishEvictions(ctx, b, works.Items)
}

// finishEvictions removes the copies on clusters being left once the new placement is healthy everywhere,
// or once an eviction's grace period has passed, and drops those eviction tasks.
func (r *Controller[T]) finishEvictions(ctx context.Context, b T, works []workv1alpha1.Work) (ctrl.Result, error) {
	spec := b.BindingSpec()
	if len(spec.GracefulEvictionTasks) == 0 {
		return ctrl.Result{}, nil
	}
	healthy := meta.IsStatusConditionTrue(b.BindingStatus().Conditions, workv1alpha1.ConditionHealthy)
	var remaining []workv1alpha1.GracefulEvictionTask
	var wait time.Duration
	for _, task := range spec.GracefulEvictionTasks {
		deadline := task.CreationTimestamp.Add(time.Duration(ptr.Deref(task.GracePeriodSeconds, 600)) * time.Second)
		if !healthy && time.Now().Before(deadline) {
			remaining = append(remaining, task)
			if d := time.Until(deadline); wait == 0 || d < wait {
				wait = d
			}
			continue
		}
		if w := workOf(works, task.FromCluster); w != nil {
			if err := client.IgnoreNotFound(r.Client.Delete(ctx, w)); err != nil {
				return ctrl.Result{}, err
			}
		}
	}
	if len(remaining) != len(spec.GracefulEvictionTasks) {
		spec.GracefulEvictionTasks = remaining
		if err := r.Client.Update(ctx, b); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{RequeueAfter: wait}, nil
}

func (r *Controller[T]) template(ctx context.Context, ref workv1alpha1.ObjectReference) (*unstructured.Unstructured, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, err
	}
	t := &unstructured.Unstructured{}
	t.SetGroupVersionKind(gv.WithKind(ref.Kind))
	return t, r.Client.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, t)
}

// dependencies returns the objects on the hub that the template's pods refer to, marked as dependencies,
// when the policy asks for them (propagateDeps). Missing ones are skipped until they appear.
func (r *Controller[T]) dependencies(ctx context.Context, template *unstructured.Unstructured, propagate bool) ([]*unstructured.Unstructured, error) {
	if !propagate {
		return nil, nil
	}
	var out []*unstructured.Unstructured
	for _, d := range interpreter.Dependencies(template) {
		obj := &unstructured.Unstructured{}
		obj.SetAPIVersion("v1")
		obj.SetKind(d.Kind)
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: template.GetNamespace(), Name: d.Name}, obj)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		annotations := obj.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[workv1alpha1.AnnotationDependency] = "true"
		obj.SetAnnotations(annotations)
		out = append(out, obj)
	}
	return out, nil
}

// ensureWork creates or updates the Work of one cluster; nothing is written when nothing changed.
func (r *Controller[T]) ensureWork(ctx context.Context, b T, rendered []*unstructured.Unstructured, overrides []string, cluster string) error {
	spec := b.BindingSpec()
	manifests, err := encodeManifests(rendered)
	if err != nil {
		return err
	}
	suspend := spec.Suspension != nil && (ptr.Deref(spec.Suspension.Dispatching, false) ||
		(spec.Suspension.DispatchingOnClusters != nil && slices.Contains(spec.Suspension.DispatchingOnClusters.ClusterNames, cluster)))
	want := workv1alpha1.WorkSpec{
		Workload:                    workv1alpha1.WorkloadTemplate{Manifests: manifests},
		PreserveResourcesOnDeletion: spec.PreserveResourcesOnDeletion,
		ConflictResolution:          spec.ConflictResolution,
	}
	if suspend {
		want.SuspendDispatching = ptr.To(true)
	}
	if want.ConflictResolution == "" {
		want.ConflictResolution = policyv1alpha1.ConflictAbort
	}
	work := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Name: WorkName(b), Namespace: clusterv1alpha1.ClusterNamespace(cluster)}}
	err = r.Client.Get(ctx, client.ObjectKeyFromObject(work), work)
	annotation := strings.Join(overrides, ",")
	if apierrors.IsNotFound(err) {
		work.Labels = workLabels(b)
		work.Finalizers = []string{workv1alpha1.FinalizerExecution}
		if annotation != "" {
			work.Annotations = map[string]string{workv1alpha1.AnnotationOverrides: annotation}
		}
		work.Spec = want
		return r.Client.Create(ctx, work)
	}
	if err != nil {
		return err
	}
	if equality.Semantic.DeepEqual(work.Spec, want) && work.Annotations[workv1alpha1.AnnotationOverrides] == annotation {
		return nil
	}
	work.Spec = want
	if annotation == "" {
		delete(work.Annotations, workv1alpha1.AnnotationOverrides)
	} else {
		metav1.SetMetaDataAnnotation(&work.ObjectMeta, workv1alpha1.AnnotationOverrides, annotation)
	}
	return r.Client.Update(ctx, work)
}

// encodeManifests encodes rendered manifests as the API server stores them, so that an unchanged Work
// compares equal byte for byte. (json.Marshal rather than MarshalJSON, whose trailing newline the API server
// does not keep: the stored Work would never equal the rendered one and be written again on every reconcile.)
func encodeManifests(rendered []*unstructured.Unstructured) ([]workv1alpha1.Manifest, error) {
	manifests := make([]workv1alpha1.Manifest, len(rendered))
	for i, m := range rendered {
		raw, err := json.Marshal(m.Object)
		if err != nil {
			return nil, err
		}
		manifests[i] = workv1alpha1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}}
	}
	return manifests, nil
}

// finalize deletes the binding's Works, letting go of their member objects first when the template was
// released rather than deleted, and drops the binding's finalizer once they are gone.
func (r *Controller[T]) finalize(ctx context.Context, b T, works []workv1alpha1.Work) error {
	release := b.GetAnnotations()[workv1alpha1.AnnotationRelease] == "true"
	for i := range works {
		w := &works[i]
		if release && !ptr.Deref(w.Spec.PreserveResourcesOnDeletion, false) {
			w.Spec.PreserveResourcesOnDeletion = ptr.To(true)
			if err := r.Client.Update(ctx, w); err != nil {
				return err
			}
		}
		if w.DeletionTimestamp == nil {
			if err := client.IgnoreNotFound(r.Client.Delete(ctx, w)); err != nil {
				return err
			}
		}
	}
	if len(works) > 0 {
		return nil // the Works' deletion brings the binding back
	}
	r.mu.Lock()
	delete(r.templateStatus, b.BindingSpec().Resource.UID)
	r.mu.Unlock()
	if controllerutil.RemoveFinalizer(b, workv1alpha1.FinalizerBinding) {
		return client.IgnoreNotFound(r.Client.Update(ctx, b))
	}
	return nil
}
