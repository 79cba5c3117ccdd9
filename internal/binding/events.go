package binding

import (
	"context"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appsv1alpha1 "github.com/flotilla-io/flotilla/api/apps/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/detector"
	"github.com/flotilla-io/flotilla/internal/rollout"
)

// What wakes which controller. The render controller writes Works, the status controller reads them: a Work
// status change (several per rollout, on every cluster at once) must not render every Work of the binding
// again, and a render must not be undone by anything but a change of what it renders from.

// statusBatchDelay is how long the status controller waits after a change of one of a binding's Works: a
// Work's status changes several times as its workload rolls out, on every cluster at once, and one
// reconcile (one status write) then takes in several of them.
const statusBatchDelay = 100 * time.Millisecond

// A batch window grows with the depth of the controller's queue: each binding waiting for a worker adds
// batchDelayPerItem, up to maxBatchDelay. A queue that is behind (a burst, a hub short of CPU) would sum a
// binding once per member as their Works report one after another; a longer window sums it once for all of
// them, and its status trails the members by no more than the queue already made it.
const (
	batchDelayPerItem = 10 * time.Millisecond
	maxBatchDelay     = time.Second
)

// batchWindow is how long a Work event waits before it wakes the binding: delay (none when zero), longer by
// batchDelayPerItem for each of depth bindings waiting in the queue, and at most maxBatchDelay.
func batchWindow(delay time.Duration, depth int) time.Duration {
	if delay == 0 {
		return 0
	}
	return min(delay+time.Duration(depth)*batchDelayPerItem, max(delay, maxBatchDelay))
}

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// bindingOf maps a Work to the binding it was rendered from, for the controller of one binding kind.
func bindingOf(o client.Object, namespaced bool) (reconcile.Request, bool) {
	l := o.GetLabels()
	if l[workv1alpha1.LabelBindingName] == "" || (l[workv1alpha1.LabelBindingNamespace] != "") != namespaced {
		return reconcile.Request{}, false
	}
	return reconcile.Request{NamespacedName: client.ObjectKey{Namespace: l[workv1alpha1.LabelBindingNamespace], Name: l[workv1alpha1.LabelBindingName]}}, true
}

// workEvents enqueues the binding of a Work, after delay (batchWindow), on the Work events that wake a
// controller. The queue keeps the earliest time an item was added for, so the first event of a batch opens
// the window and those after it within the window join it.
func workEvents(namespaced bool, delay time.Duration, wakes workWakes) handler.Funcs {
	add := func(o client.Object, q queue) {
		if req, ok := bindingOf(o, namespaced); ok {
			q.AddAfter(req, batchWindow(delay, q.Len()))
		}
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q queue) {
			if wakes.create {
				add(e.Object, q)
			}
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q queue) {
			old, updated, ok := works(e.ObjectOld, e.ObjectNew)
			if ok && wakes.update(old, updated) {
				add(e.ObjectNew, q)
			}
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q queue) { add(e.Object, q) },
	}
}

func works(old, updated client.Object) (*workv1alpha1.Work, *workv1alpha1.Work, bool) {
	o, ok1 := old.(*workv1alpha1.Work)
	n, ok2 := updated.(*workv1alpha1.Work)
	return o, n, ok1 && ok2
}

// workWakes says which Work events wake a controller; a deleted Work wakes both.
type workWakes struct {
	create bool
	update func(old, updated *workv1alpha1.Work) bool
}

// renderWakes: a Work whose spec someone else changed (its generation moved) is rendered again, and a
// deleted one recreated. A new Work is one the render controller just created, and a status change says
// nothing about what the Work should hold, except under a progressive rollout (the Work carries a revision):
// a cluster becoming healthy on it, or no longer, moves the rollout along. So does a healthy Work moved to a
// new revision that renders the same spec: its generation and status stay, no status change would follow,
// and its minSuccessTime starts now.
var renderWakes = workWakes{update: func(old, updated *workv1alpha1.Work) bool {
	revision := updated.Annotations[workv1alpha1.AnnotationRevision]
	return old.Generation != updated.Generation ||
		revision != "" && rollout.Healthy(old) != rollout.Healthy(updated) ||
		revision != "" && revision != old.Annotations[workv1alpha1.AnnotationRevision] && rollout.Healthy(updated)
}}

// statusWakes: a new Work, a changed status, and a changed spec (the status the agent reported no longer
// describes it) can each change the aggregated status.
var statusWakes = workWakes{create: true, update: func(old, updated *workv1alpha1.Work) bool {
	return old.Generation != updated.Generation || !equality.Semantic.DeepEqual(old.Status, updated.Status)
}}

// renderBindingChanged passes the binding updates that can change its Works: its spec (generation), its
// deletion, and its annotations (the release mark) and finalizers. Status writes (the scheduler's, the status
// controller's and this controller's own) pass not.
var renderBindingChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	o, n := e.ObjectOld, e.ObjectNew
	return o.GetGeneration() != n.GetGeneration() || (o.GetDeletionTimestamp() == nil) != (n.GetDeletionTimestamp() == nil) ||
		!maps.Equal(o.GetAnnotations(), n.GetAnnotations()) || !slices.Equal(o.GetFinalizers(), n.GetFinalizers())
}}

// statusBindingChanged passes the binding updates that can change its aggregated status: a new placement
// (spec.clusters, or any spec change, since the conditions carry the generation they describe), its
// deletion, and a change of the render controller's Rendered condition (the template's status repeats it).
// Other status writes pass not, this controller's own included.
var statusBindingChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	o, n := e.ObjectOld, e.ObjectNew
	return o.GetGeneration() != n.GetGeneration() || (o.GetDeletionTimestamp() == nil) != (n.GetDeletionTimestamp() == nil) ||
		renderedChanged(o, n)
}}

// renderedChanged says whether a binding's Rendered condition changed its status or message.
func renderedChanged(o, n client.Object) bool {
	ob, ok1 := o.(workv1alpha1.Binding)
	nb, ok2 := n.(workv1alpha1.Binding)
	if !ok1 || !ok2 {
		return false
	}
	before := meta.FindStatusCondition(ob.BindingStatus().Conditions, appsv1alpha1.ConditionRendered)
	after := meta.FindStatusCondition(nb.BindingStatus().Conditions, appsv1alpha1.ConditionRendered)
	if before == nil || after == nil {
		return (before == nil) != (after == nil)
	}
	return before.Status != after.Status || before.Message != after.Message
}

// clusterChanged passes the Cluster updates an override policy's targetCluster can tell apart: its labels
// and its spec (provider, region, zones). A Cluster's status (heartbeats, resource summaries) passes not, nor
// does a new or deleted Cluster: the scheduler places bindings there, and that brings them here.
var clusterChanged = predicate.Funcs{
	CreateFunc: func(event.CreateEvent) bool { return false },
	DeleteFunc: func(event.DeleteEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() || !maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels())
	},
}

// templateEvents maps a template whose content changed to its binding, for the controller of one binding
// kind, and so does a watch's initial list (a watch started after the template last changed). New and
// deleted templates are left to the detector, which creates and deletes their bindings.
func templateEvents(namespaced bool) handler.TypedEventHandler[*unstructured.Unstructured, reconcile.Request] {
	add := func(t *unstructured.Unstructured, q queue) {
		if (t.GetNamespace() != "") == namespaced {
			name := workv1alpha1.BindingName(t.GroupVersionKind().GroupKind(), t.GetName())
			q.Add(reconcile.Request{NamespacedName: client.ObjectKey{Namespace: t.GetNamespace(), Name: name}})
		}
	}
	return handler.TypedFuncs[*unstructured.Unstructured, reconcile.Request]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[*unstructured.Unstructured], q queue) {
			if e.IsInInitialList {
				add(e.Object, q)
			}
		},
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[*unstructured.Unstructured], q queue) {
			if detector.ContentChanged(e.ObjectOld, e.ObjectNew) {
				add(e.ObjectNew, q)
			}
		},
	}
}

// dependencyEvents maps every event of a ConfigMap or Secret to the ResourceBindings of its namespace that
// take their template's dependencies along (propagateDeps). Other kinds bring nothing.
func dependencyEvents(c client.Reader) func(schema.GroupVersionKind) handler.TypedEventHandler[*unstructured.Unstructured, reconcile.Request] {
	dependents := handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, o *unstructured.Unstructured) []reconcile.Request {
		list := &workv1alpha1.ResourceBindingList{}
		if err := c.List(ctx, list, client.InNamespace(o.GetNamespace())); err != nil {
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
	return func(gvk schema.GroupVersionKind) handler.TypedEventHandler[*unstructured.Unstructured, reconcile.Request] {
		if gvk.GroupKind() == (schema.GroupKind{Kind: "ConfigMap"}) || gvk.GroupKind() == (schema.GroupKind{Kind: "Secret"}) {
			return dependents
		}
		return handler.TypedFuncs[*unstructured.Unstructured, reconcile.Request]{}
	}
}
