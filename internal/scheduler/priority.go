package scheduler

import (
	"context"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// The scheduler's queue is controller-runtime's priority queue, and every binding is enqueued at its
// spec.schedulePriority (the value of its policy's PriorityClass, resolved by the detector): when many
// bindings wait (the hub starting, a cluster joining that wakes every binding), those of higher priority are
// placed first, and equals in the order they came. A requeue keeps the priority it was enqueued with.

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// priorityOf is a binding's place in the queue: higher goes first.
func priorityOf(spec *workv1alpha1.ResourceBindingSpec) int {
	if spec.SchedulePriority == nil {
		return 0
	}
	return int(spec.SchedulePriority.Priority)
}

// enqueue adds a binding to q at its priority (a queue without priorities takes it in order).
func enqueue(q queue, b client.Object) {
	o, ok := b.(workv1alpha1.Binding)
	if !ok {
		return
	}
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(b)}
	if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok {
		pq.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(priorityOf(o.BindingSpec()))}, req)
		return
	}
	q.Add(req)
}

// bindingEvents enqueues a binding at its priority on each of its own events the predicates pass, including
// those of the hub's first listing, which controller-runtime would otherwise put behind every other event.
var bindingEvents = handler.Funcs{
	CreateFunc:  func(_ context.Context, e event.CreateEvent, q queue) { enqueue(q, e.Object) },
	UpdateFunc:  func(_ context.Context, e event.UpdateEvent, q queue) { enqueue(q, e.ObjectNew) },
	DeleteFunc:  func(_ context.Context, e event.DeleteEvent, q queue) { enqueue(q, e.Object) },
	GenericFunc: func(_ context.Context, e event.GenericEvent, q queue) { enqueue(q, e.Object) },
}
