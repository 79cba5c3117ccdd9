package detector

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/selection"
)

// What the hub watches of templates: where policies select a kind, and where bindings of it exist. A
// released template's binding goes only once its Works let go, and the binding controllers read and follow
// the template until then; a binding made by hand keeps its template watched the same way. Nothing else is
// watched: a kind no policy selects and no binding names any more is not, and a kind only PropagationPolicies
// select is watched in their namespaces only.

// selectedBy says where policies select each kind: a PropagationPolicy in its own namespace (it claims
// nothing elsewhere), a ClusterPropagationPolicy in the namespace its selector names, or in every namespace
// (""). Flotilla's own kinds are never propagated, so never watched.
func selectedBy(policies []Policy) map[schema.GroupKind]sets.Set[string] {
	out := map[schema.GroupKind]sets.Set[string]{}
	for _, p := range policies {
		for _, s := range p.Spec.ResourceSelectors {
			gv, err := schema.ParseGroupVersion(s.APIVersion)
			if gk := gv.WithKind(s.Kind).GroupKind(); err == nil && !selection.FlotillaGroup(gk.Group) {
				namespace := p.Namespace
				if p.Cluster() {
					namespace = s.Namespace
				}
				add(out, gk, namespace)
			}
		}
	}
	return out
}

// boundIn says where bindings of each kind exist: a ResourceBinding's namespace, and every namespace for a
// ClusterResourceBinding. A ResourceBinding that takes its template's dependencies along (propagateDeps)
// also needs the ConfigMaps and Secrets of its namespace: a change of one reaches the clusters again.
func boundIn(rbs []workv1alpha1.ResourceBinding, crbs []workv1alpha1.ClusterResourceBinding) map[schema.GroupKind]sets.Set[string] {
	out := map[schema.GroupKind]sets.Set[string]{}
	for _, b := range rbs {
		if gv, err := schema.ParseGroupVersion(b.Spec.Resource.APIVersion); err == nil {
			add(out, gv.WithKind(b.Spec.Resource.Kind).GroupKind(), b.Namespace)
		}
		if b.Spec.PropagateDeps {
			add(out, corev1.SchemeGroupVersion.WithKind("ConfigMap").GroupKind(), b.Namespace)
			add(out, corev1.SchemeGroupVersion.WithKind("Secret").GroupKind(), b.Namespace)
		}
	}
	for _, b := range crbs {
		if gv, err := schema.ParseGroupVersion(b.Spec.Resource.APIVersion); err == nil {
			add(out, gv.WithKind(b.Spec.Resource.Kind).GroupKind(), "")
		}
	}
	return out
}

func add(m map[schema.GroupKind]sets.Set[string], gk schema.GroupKind, namespace string) {
	if m[gk] == nil {
		m[gk] = sets.New[string]()
	}
	m[gk].Insert(namespace)
}

// narrowest is where a kind wanted in namespaces is watched: in every namespace, by one watch, once that is
// wanted; a cluster-scoped kind only then (a PropagationPolicy claims no cluster-scoped template).
func narrowest(namespaces sets.Set[string], namespaced bool) sets.Set[string] {
	switch {
	case namespaces.Has(""):
		return sets.New("")
	case namespaced:
		return namespaces
	}
	return nil
}

// merge is where a or b watches, each kind under b's version when b has it.
func merge(a, b map[schema.GroupKind]scope) map[schema.GroupKind]scope {
	out := map[schema.GroupKind]scope{}
	for _, m := range []map[schema.GroupKind]scope{a, b} {
		for gk, s := range m {
			out[gk] = scope{gvk: s.gvk, namespaces: narrowest(s.namespaces.Union(out[gk].namespaces), true)}
		}
	}
	return out
}

// scopes resolves where kinds are wanted into where they are watched, under the version the hub prefers for
// each (so a kind selected under two versions is watched once), and names the kinds the hub does not serve.
func (d *Detector) scopes(wanted map[schema.GroupKind]sets.Set[string]) (map[schema.GroupKind]scope, sets.Set[schema.GroupKind], error) {
	out, unserved := map[schema.GroupKind]scope{}, sets.New[schema.GroupKind]()
	var errs []error
	for gk, namespaces := range wanted {
		mapping, err := d.mapper.RESTMapping(gk)
		if meta.IsNoMatchError(err) {
			unserved.Insert(gk)
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("looking up %s: %w", gk, err))
			continue
		}
		if namespaces = narrowest(namespaces, mapping.Scope.Name() == meta.RESTScopeNameNamespace); namespaces.Len() > 0 {
			out[gk] = scope{gvk: mapping.GroupVersionKind, namespaces: namespaces}
		}
	}
	return out, unserved, errors.Join(errs...)
}

// syncWatches makes the hub watch templates where policies select them (selected) and where bindings of
// them exist, and nowhere else.
func (d *Detector) syncWatches(ctx context.Context) error {
	d.syncMu.Lock()
	defer d.syncMu.Unlock()
	rbs, crbs := &workv1alpha1.ResourceBindingList{}, &workv1alpha1.ClusterResourceBindingList{}
	if err := d.client.List(ctx, rbs, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	if err := d.client.List(ctx, crbs, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	bound, _, err := d.scopes(boundIn(rbs.Items, crbs.Items))
	if err != nil {
		return err
	}
	d.mu.Lock()
	want := merge(bound, d.selected)
	d.mu.Unlock()
	return d.templates.set(ctx, want)
}

// selects reports whether a policy selects templates of gk in namespace.
func (d *Detector) selects(gk schema.GroupKind, namespace string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.selected[gk].covers(namespace)
}

// setupWatches registers the controller that keeps the watches bindings need: a new binding may need one (a
// binding made by hand, of a kind no policy selects, or one that takes dependencies along), a deleted one
// may end one.
func (d *Detector) setupWatches(mgr ctrl.Manager) error {
	toOne := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: "watches"}}}
	})
	var opts controller.Options
	if d.templates.everyReplica {
		opts.NeedLeaderElection = ptr.To(false) // the watches a sharded replica's bindings need
	}
	return ctrl.NewControllerManagedBy(mgr).Named("detector-watches").WithOptions(opts).
		Watches(&workv1alpha1.ResourceBinding{}, toOne, builder.WithPredicates(bindingWatchChanged)).
		Watches(&workv1alpha1.ClusterResourceBinding{}, toOne, builder.WithPredicates(bindingWatchChanged)).
		Complete(reconcile.Func(func(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
			return reconcile.Result{}, d.syncWatches(ctx)
		}))
}

// bindingWatchChanged passes what changes the watches a binding needs: its creation and deletion, and a
// change of propagateDeps.
var bindingWatchChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, ok1 := e.ObjectOld.(workv1alpha1.Binding)
		updated, ok2 := e.ObjectNew.(workv1alpha1.Binding)
		return ok1 && ok2 && old.BindingSpec().PropagateDeps != updated.BindingSpec().PropagateDeps
	},
	GenericFunc: func(event.GenericEvent) bool { return false },
}
