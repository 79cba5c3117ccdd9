package execution

import (
	"reflect"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// appliedObjects follows what Flotilla applied in a member, so that a change of an object's status reaches
// its Work at once: before, the executor read rolling-out objects back every 500 ms, and the hub's summed
// status lagged the members by 0.6 s on an idle fleet. It keeps one informer per kind, started when an
// object of that kind that carries a status is first applied (ConfigMaps, Secrets and other kinds without a
// status are not followed: they have nothing to reflect), and each informer lists and caches only objects
// with Flotilla's managed-by label, without their managedFields, so memory grows with what Flotilla applied
// and nothing else. A kind the member's credentials may not list and watch cluster-wide never fills its
// cache: its objects are then read from the member whenever their Work is looked at (every steadyPeriod at
// the latest).
type appliedObjects struct {
	dynamic dynamic.Interface
	// notify is told the Work (from the object's work annotation) of every object that was added, deleted,
	// or whose status, generation or deletion changed.
	notify func(work types.NamespacedName)
	stop   chan struct{}

	mu    sync.Mutex
	kinds map[schema.GroupVersionResource]informers.GenericInformer
}

func newAppliedObjects(dyn dynamic.Interface, notify func(types.NamespacedName)) *appliedObjects {
	return &appliedObjects{dynamic: dyn, notify: notify, stop: make(chan struct{}), kinds: map[schema.GroupVersionResource]informers.GenericInformer{}}
}

// follow starts following a kind, once.
func (a *appliedObjects) follow(gvr schema.GroupVersionResource) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.kinds[gvr]; ok {
		return
	}
	select {
	case <-a.stop:
		return
	default:
	}
	inf := dynamicinformer.NewFilteredDynamicInformer(a.dynamic, gvr, metav1.NamespaceAll, 0, cache.Indexers{},
		func(o *metav1.ListOptions) {
			o.LabelSelector = workv1alpha1.LabelManagedBy + "=" + workv1alpha1.ManagedByValue
		})
	_ = inf.Informer().SetTransform(withoutManagedFields) // fails only once started
	_, _ = inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: a.changed,
		UpdateFunc: func(old, cur any) {
			if statusChanged(old, cur) {
				a.changed(cur)
			}
		},
		DeleteFunc: a.changed,
	})
	a.kinds[gvr] = inf
	go inf.Informer().Run(a.stop)
}

// get returns the cached object; ok is false when the kind is not followed or its cache not filled yet, and
// the caller must read the member instead. A followed kind's object missing from the cache is returned as
// NotFound, which callers take only as a reason to apply again, never to delete anything.
func (a *appliedObjects) get(gvr schema.GroupVersionResource, namespace, name string) (obj *unstructured.Unstructured, ok bool, err error) {
	a.mu.Lock()
	inf, followed := a.kinds[gvr]
	a.mu.Unlock()
	if !followed || !inf.Informer().HasSynced() {
		return nil, false, nil
	}
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	item, exists, err := inf.Informer().GetIndexer().GetByKey(key)
	if err != nil || !exists {
		return nil, true, err
	}
	u, isObject := item.(*unstructured.Unstructured)
	if !isObject {
		return nil, true, nil
	}
	return u.DeepCopy(), true, nil
}

func (a *appliedObjects) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	select {
	case <-a.stop:
	default:
		close(a.stop)
	}
}

// changed tells notify which Work the object belongs to.
func (a *appliedObjects) changed(obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	ns, name, ok := strings.Cut(u.GetAnnotations()[workv1alpha1.AnnotationWork], "/")
	if !ok || ns == "" || name == "" {
		return
	}
	a.notify(types.NamespacedName{Namespace: ns, Name: name})
}

// statusChanged says whether an update can change what the Work reports or does: the status, the
// generation (a change in the member that the next apply undoes) or the deletion of the object.
func statusChanged(old, cur any) bool {
	o, ok1 := old.(*unstructured.Unstructured)
	c, ok2 := cur.(*unstructured.Unstructured)
	if !ok1 || !ok2 {
		return true
	}
	return o.GetGeneration() != c.GetGeneration() || !reflect.DeepEqual(o.Object["status"], c.Object["status"]) ||
		(o.GetDeletionTimestamp() == nil) != (c.GetDeletionTimestamp() == nil)
}

// withoutManagedFields drops what the cache does not need and would take most of its memory.
func withoutManagedFields(obj any) (any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		u.SetManagedFields(nil)
		if a := u.GetAnnotations(); a[lastApplied] != "" {
			delete(a, lastApplied)
			u.SetAnnotations(a)
		}
	}
	return obj, nil
}

const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"
