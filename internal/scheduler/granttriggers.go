package scheduler

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/clusterset"
)

// What changes a namespace's grant (clusterset.Lookup) places its ResourceBindings again: a ClusterSetBinding
// created or deleted (its set is immutable), a ClusterSet created, deleted or given another selector, and
// the hub's mode switched. Status writes (set sizes, a binding's Bound condition) change nothing a grant
// reads, so they pass by; a Cluster's labels are already a placement change (clusterEvents). The events of
// the hub's first listing bring nothing back either: every binding is listed then too.

// setBindingEvents enqueues the ResourceBindings of a ClusterSetBinding's namespace.
func setBindingEvents(c client.Reader) handler.Funcs {
	enqueueNamespace := func(ctx context.Context, q queue, o client.Object) {
		enqueueBindingsIn(ctx, c, q, o.GetNamespace())
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q queue) {
			if !e.IsInInitialList {
				enqueueNamespace(ctx, q, e.Object)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q queue) { enqueueNamespace(ctx, q, e.Object) },
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) {
			if e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() {
				enqueueNamespace(ctx, q, e.ObjectNew)
			}
		},
	}
}

// setEvents enqueues the ResourceBindings of the namespaces bound to a ClusterSet.
func setEvents(c client.Reader) handler.Funcs {
	enqueueBound := func(ctx context.Context, q queue, set string) {
		bindings := &clusterv1alpha1.ClusterSetBindingList{}
		if err := c.List(ctx, bindings); err != nil {
			return
		}
		for _, namespace := range boundNamespaces(bindings.Items, set) {
			enqueueBindingsIn(ctx, c, q, namespace)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q queue) {
			if !e.IsInInitialList {
				enqueueBound(ctx, q, e.Object.GetName())
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q queue) { enqueueBound(ctx, q, e.Object.GetName()) },
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) {
			if e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() {
				enqueueBound(ctx, q, e.ObjectNew.GetName())
			}
		},
	}
}

// modeEvents enqueues every ResourceBinding when the hub's mode record changes (the cache holds no other
// ConfigMap: hub.CacheOptions).
func modeEvents(c client.Reader) handler.Funcs {
	enqueueAll := func(ctx context.Context, q queue, o client.Object) {
		if o.GetNamespace() == clusterv1alpha1.SystemNamespace && o.GetName() == clusterset.ModeConfigMap {
			enqueueBindingsIn(ctx, c, q, "")
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q queue) {
			if !e.IsInInitialList {
				enqueueAll(ctx, q, e.Object)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q queue) { enqueueAll(ctx, q, e.Object) },
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) {
			old, okOld := e.ObjectOld.(*corev1.ConfigMap)
			updated, okNew := e.ObjectNew.(*corev1.ConfigMap)
			if okOld && okNew && old.Data[clusterset.ModeKey] != updated.Data[clusterset.ModeKey] {
				enqueueAll(ctx, q, updated)
			}
		},
	}
}

// boundNamespaces are the namespaces with a ClusterSetBinding to set.
func boundNamespaces(bindings []clusterv1alpha1.ClusterSetBinding, set string) []string {
	var out []string
	for i := range bindings {
		if bindings[i].Spec.ClusterSet == set {
			out = append(out, bindings[i].Namespace)
		}
	}
	return out
}

// enqueueBindingsIn enqueues the ResourceBindings of namespace, or of every namespace for "".
func enqueueBindingsIn(ctx context.Context, c client.Reader, q queue, namespace string) {
	bindings := &workv1alpha1.ResourceBindingList{}
	if err := c.List(ctx, bindings, client.InNamespace(namespace)); err != nil {
		return
	}
	for i := range bindings.Items {
		enqueue(q, &bindings.Items[i])
	}
}
