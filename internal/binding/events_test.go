package binding

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// TestWorkEventsWake: a Work's status wakes the status controller only, a change of its spec by someone else
// the render controller too, and a change of its metadata neither.
func TestWorkEventsWake(t *testing.T) {
	base := func() *workv1alpha1.Work {
		return &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: clusterv1alpha1.ClusterNamespace("a"), Name: "shop.web-deployment", Generation: 1,
			Labels: map[string]string{workv1alpha1.LabelBindingNamespace: "shop", workv1alpha1.LabelBindingName: "web-deployment"}}}
	}
	// Under a progressive rollout the Work carries a revision; healthy is what its agent reports of a
	// workload that runs as asked, on the Work's current generation.
	onRevision := func(hash string) func(w *workv1alpha1.Work) {
		return func(w *workv1alpha1.Work) { w.Annotations = map[string]string{workv1alpha1.AnnotationRevision: hash} }
	}
	healthy := func(w *workv1alpha1.Work) {
		w.Status.Conditions = []metav1.Condition{{Type: workv1alpha1.WorkConditionApplied, Status: metav1.ConditionTrue, ObservedGeneration: w.Generation}}
		w.Status.ManifestStatuses = []workv1alpha1.ManifestStatus{{Applied: true, Health: workv1alpha1.ResourceHealthy,
			Conditions: []metav1.Condition{{Type: workv1alpha1.ManifestConditionObserved, Status: metav1.ConditionTrue}}}}
	}
	both := func(fs ...func(w *workv1alpha1.Work)) func(w *workv1alpha1.Work) {
		return func(w *workv1alpha1.Work) {
			for _, f := range fs {
				f(w)
			}
		}
	}
	tests := []struct {
		name           string
		before         func(w *workv1alpha1.Work) // old and updated alike
		change         func(w *workv1alpha1.Work)
		render, status bool
	}{
		{"under a rollout, the agent reports the revision healthy", onRevision("r2"), healthy, true, true},
		{"under a rollout, a healthy Work moves to a revision of the same spec", both(onRevision("r1"), healthy), onRevision("r2"), true, false},
		{"under a rollout, a Work not healthy moves to a revision of the same spec", onRevision("r1"), onRevision("r2"), false, false},
		{"under a rollout, the agent reports a healthy revision again", both(onRevision("r2"), healthy), func(w *workv1alpha1.Work) {
			w.Status.Conditions[0].Message = "again"
		}, false, true},
		{"the agent reports status", nil, func(w *workv1alpha1.Work) {
			w.Status.ManifestStatuses = []workv1alpha1.ManifestStatus{{Applied: true, Health: workv1alpha1.ResourceHealthy}}
		}, false, true},
		{"the agent adds its finalizer", nil, func(w *workv1alpha1.Work) { w.Finalizers = []string{workv1alpha1.FinalizerExecution} }, false, false},
		{"someone changed the spec", nil, func(w *workv1alpha1.Work) {
			w.Generation = 2
			w.Spec.SuspendDispatching = new(bool)
		}, true, true},
		{"the status carries a new raw status", nil, func(w *workv1alpha1.Work) {
			w.Status.ManifestStatuses = []workv1alpha1.ManifestStatus{{Status: &runtime.RawExtension{Raw: []byte(`{"readyReplicas":1}`)}}}
		}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old, updated := base(), base()
			if tt.before != nil {
				tt.before(old)
				tt.before(updated)
			}
			tt.change(updated)
			for controller, wakes := range map[string]struct {
				wakes workWakes
				want  bool
			}{"render": {renderWakes, tt.render}, "status": {statusWakes, tt.status}} {
				q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
				workEvents(true, 0, wakes.wakes).Update(context.Background(), event.UpdateEvent{ObjectOld: old, ObjectNew: updated}, q)
				if got := q.Len() == 1; got != wakes.want {
					t.Errorf("%s controller woken: %v, want %v", controller, got, wakes.want)
				}
				q.ShutDown()
			}
		})
	}
	// A deleted Work wakes both (the render controller recreates it); a new one only the status controller,
	// and only the controller of its binding's kind.
	for _, tt := range []struct {
		name       string
		wakes      workWakes
		namespaced bool
		create     bool
		want       int
	}{
		{"render, created", renderWakes, true, true, 0},
		{"render, deleted", renderWakes, true, false, 1},
		{"status, created", statusWakes, true, true, 1},
		{"status, deleted", statusWakes, true, false, 1},
		{"cluster binding controller, a namespaced binding's Work", statusWakes, false, true, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
			defer q.ShutDown()
			h := workEvents(tt.namespaced, 0, tt.wakes)
			if tt.create {
				h.Create(context.Background(), event.CreateEvent{Object: base()}, q)
			} else {
				h.Delete(context.Background(), event.DeleteEvent{Object: base()}, q)
			}
			if q.Len() != tt.want {
				t.Fatalf("%d requests, want %d", q.Len(), tt.want)
			}
			if tt.want == 1 {
				if req, _ := q.Get(); req.Namespace != "shop" || req.Name != "web-deployment" {
					t.Fatalf("request %v", req)
				}
			}
		})
	}
}

// TestTemplateEventsWake: a template whose content changed brings its binding back to the render controller
// of its scope; a status write (the status controller's own, into the template) does not.
func TestTemplateEventsWake(t *testing.T) {
	template := func(namespace string) *unstructured.Unstructured {
		u := parse(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","resourceVersion":"1"},"spec":{"replicas":2}}`)
		u.SetNamespace(namespace)
		return u
	}
	tests := []struct {
		name       string
		namespace  string
		namespaced bool
		change     func(u *unstructured.Unstructured)
		want       bool
	}{
		{"spec", "shop", true, func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, int64(3), "spec", "replicas")
		}, true},
		{"status", "shop", true, func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, int64(2), "status", "replicas")
			u.SetResourceVersion("2")
		}, false},
		{"spec, seen by the cluster binding controller", "shop", false, func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, int64(3), "spec", "replicas")
		}, false},
		{"cluster-scoped", "", false, func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"a": "b"}) }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
			defer q.ShutDown()
			old, updated := template(tt.namespace), template(tt.namespace)
			tt.change(updated)
			templateEvents(tt.namespaced).Update(context.Background(), event.TypedUpdateEvent[*unstructured.Unstructured]{ObjectOld: old, ObjectNew: updated}, q)
			if got := q.Len() == 1; got != tt.want {
				t.Fatalf("woken: %v, want %v", got, tt.want)
			}
			if tt.want {
				want := workv1alpha1.BindingName(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "web")
				if req, _ := q.Get(); req.Name != want || req.Namespace != tt.namespace {
					t.Fatalf("request %v, want %s/%s", req, tt.namespace, want)
				}
			}
		})
	}
}

// TestUnneeded: the Works of clusters that are neither targeted nor being evicted from go; the others stay.
func TestUnneeded(t *testing.T) {
	work := func(cluster string) workv1alpha1.Work {
		return workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: clusterv1alpha1.ClusterNamespace(cluster), Name: "w"}}
	}
	spec := &workv1alpha1.ResourceBindingSpec{
		Clusters:              []workv1alpha1.TargetCluster{{Name: "a"}},
		GracefulEvictionTasks: []workv1alpha1.GracefulEvictionTask{{FromCluster: "leaving"}},
	}
	got := unneeded(spec, []workv1alpha1.Work{work("a"), work("leaving"), work("gone")})
	if len(got) != 1 || got[0].Namespace != clusterv1alpha1.ClusterNamespace("gone") {
		t.Fatalf("unneeded %v, want only the Work of gone", got)
	}
	if got := unneeded(&workv1alpha1.ResourceBindingSpec{Clusters: spec.Clusters}, []workv1alpha1.Work{work("a"), work("leaving")}); len(got) != 1 || got[0].Namespace != clusterv1alpha1.ClusterNamespace("leaving") {
		t.Fatalf("once the scheduler dropped the eviction task, the old Work goes: %v", got)
	}
}

// TestClusterChanged: a Cluster's labels and spec can change which overrides target it; its status cannot.
func TestClusterChanged(t *testing.T) {
	base := func() *clusterv1alpha1.Cluster {
		return &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "a", Generation: 1, Labels: map[string]string{"tier": "gold"}}}
	}
	for _, tt := range []struct {
		name   string
		change func(c *clusterv1alpha1.Cluster)
		want   bool
	}{
		{"a heartbeat", func(c *clusterv1alpha1.Cluster) { c.Status.KubernetesVersion = "v1.37.2"; c.ResourceVersion = "2" }, false},
		{"a label", func(c *clusterv1alpha1.Cluster) { c.Labels["tier"] = "silver" }, true},
		{"the region", func(c *clusterv1alpha1.Cluster) { c.Spec.Region = "eu"; c.Generation = 2 }, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			old, updated := base(), base()
			tt.change(updated)
			if got := clusterChanged.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: updated}); got != tt.want {
				t.Fatalf("woken: %v, want %v", got, tt.want)
			}
		})
	}
}

// TestBatchWindowGrowsWithTheQueue: the status controller's window is statusBatchDelay on an idle queue,
// longer by batchDelayPerItem for each binding waiting, never longer than maxBatchDelay; the render
// controller's (no delay) stays none.
func TestBatchWindowGrowsWithTheQueue(t *testing.T) {
	for _, tt := range []struct {
		delay time.Duration
		depth int
		want  time.Duration
	}{
		{0, 500, 0},
		{statusBatchDelay, 0, statusBatchDelay},
		{statusBatchDelay, 20, statusBatchDelay + 200*time.Millisecond},
		{statusBatchDelay, 90, time.Second},
		{statusBatchDelay, 5000, time.Second},
		{2 * time.Second, 10, 2 * time.Second},
	} {
		if got := batchWindow(tt.delay, tt.depth); got != tt.want {
			t.Errorf("batchWindow(%s, %d) = %s, want %s", tt.delay, tt.depth, got, tt.want)
		}
	}
}

// TestWorkEventsInOneWindowWakeTheBindingOnce: the status reports of a binding's Works that arrive within one
// window wake its status controller once (one summed status written), however many there are; the window is
// longer while other bindings wait in the queue.
func TestWorkEventsInOneWindowWakeTheBindingOnce(t *testing.T) {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	for i := range 30 { // other bindings waiting for a worker: a window of 100 ms + 30 × 10 ms
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "other", Name: fmt.Sprint(i)}})
	}
	h := workEvents(true, statusBatchDelay, statusWakes)
	start := time.Now()
	for i, cluster := range []string{"a", "b", "c", "a", "b"} {
		old := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: clusterv1alpha1.ClusterNamespace(cluster), Name: "shop.web-deployment", Generation: 1,
			Labels: map[string]string{workv1alpha1.LabelBindingNamespace: "shop", workv1alpha1.LabelBindingName: "web-deployment"}}}
		updated := old.DeepCopy()
		updated.Status.ManifestStatuses = []workv1alpha1.ManifestStatus{{Applied: true, Health: workv1alpha1.ResourceHealthy, Identifier: workv1alpha1.ResourceIdentifier{Ordinal: i}}}
		h.Update(context.Background(), event.UpdateEvent{ObjectOld: old, ObjectNew: updated}, q)
		time.Sleep(20 * time.Millisecond)
	}
	if q.Len() != 30 {
		t.Fatalf("%d requests right after the reports, want the 30 waiting before", q.Len())
	}
	time.Sleep(600 * time.Millisecond)
	if q.Len() != 31 {
		t.Fatalf("%d requests once the window closed, want 31: the binding once", q.Len())
	}
	for range 30 {
		req, _ := q.Get()
		q.Done(req)
	}
	req, _ := q.Get()
	if req.Namespace != "shop" || req.Name != "web-deployment" {
		t.Fatalf("request %v", req)
	}
	if waited := time.Since(start); waited < 400*time.Millisecond {
		t.Fatalf("the binding was ready after %s, want the window of 400 ms", waited)
	}
}
