package scheduler

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

// prioritizedBindings are bindings in the order their events come, and the order the scheduler must take
// them from its queue: by priority, then in arrival order.
func prioritizedBindings() (arrival []client.Object, want []string) {
	b := func(name string, priority *int32) client.Object {
		rb := &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		if priority != nil {
			rb.Spec.SchedulePriority = &workv1alpha1.SchedulePriority{Priority: *priority}
		}
		return rb
	}
	p := func(v int32) *int32 { return &v }
	arrival = []client.Object{b("none-1", nil), b("zero", p(0)), b("negative", p(-5)), b("none-2", nil),
		b("mid", p(100)), b("none-3", nil), b("high", p(1000000))}
	return arrival, []string{"high", "mid", "none-1", "zero", "none-2", "none-3", "negative"}
}

// drain takes every request from q, in the order a worker gets them.
func drain(t *testing.T, q priorityqueue.PriorityQueue[reconcile.Request], n int) []string {
	t.Helper()
	if got := q.Len(); got != n { // Len also moves every added item into the queue proper
		t.Fatalf("%d requests queued, want %d", got, n)
	}
	var order []string
	for range n {
		req, _ := q.Get()
		order = append(order, req.Name)
		q.Done(req)
	}
	return order
}

func sameOrder(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestQueueOrdersBySchedulePriority: bindings enqueued at once (the hub's first listing; a cluster joining)
// leave the scheduler's queue by schedulePriority, then in arrival order.
func TestQueueOrdersBySchedulePriority(t *testing.T) {
	ctx := context.Background()
	arrival, want := prioritizedBindings()

	t.Run("the bindings' own events", func(t *testing.T) {
		q := priorityqueue.New[reconcile.Request]("scheduler-priority-bindings")
		defer q.ShutDown()
		for _, b := range arrival {
			bindingEvents.Create(ctx, event.CreateEvent{Object: b, IsInInitialList: true}, q)
		}
		if got := drain(t, q, len(arrival)); !sameOrder(got, want) {
			t.Errorf("scheduled in the order %v, want %v", got, want)
		}
		// An update raises a queued binding to its new priority.
		for _, b := range arrival[:2] {
			bindingEvents.Create(ctx, event.CreateEvent{Object: b}, q)
		}
		raised := arrival[1].DeepCopyObject().(*workv1alpha1.ResourceBinding)
		raised.Spec.SchedulePriority = &workv1alpha1.SchedulePriority{Priority: 7}
		bindingEvents.Update(ctx, event.UpdateEvent{ObjectOld: arrival[1], ObjectNew: raised}, q)
		if got := drain(t, q, 2); !sameOrder(got, []string{"zero", "none-1"}) {
			t.Errorf("after raising zero to 7: %v", got)
		}
	})

	t.Run("a cluster event waking every binding", func(t *testing.T) {
		c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(arrival...).Build()
		q := priorityqueue.New[reconcile.Request]("scheduler-priority-clusters")
		defer q.ShutDown()
		events := clusterEvents(c, func() client.ObjectList { return &workv1alpha1.ResourceBindingList{} })
		events.Delete(ctx, event.DeleteEvent{Object: &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "m1"}}}, q)
		got := drain(t, q, len(arrival))
		// The fake client lists by name, not by arrival: only the priorities' order is certain.
		if got[0] != "high" || got[1] != "mid" || got[len(got)-1] != "negative" {
			t.Errorf("scheduled in the order %v, want high, mid, the priority-0 ones, negative", got)
		}
	})
}
