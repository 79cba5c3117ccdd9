// Package detector matches templates (ordinary objects on the hub) to the policy that places them, and keeps
// one ResourceBinding (namespaced template) or ClusterResourceBinding (cluster-scoped template) per claimed
// template. It watches templates only where some policy selects them, or bindings of them exist (Templates,
// watches.go), and stops watching once neither is so. A template that no policy matches any more is
// released: its binding goes, its Works are released, and its objects keep running in the members.
package detector

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	schedulingv1 "k8s.io/api/scheduling/v1"
	apiextensionshelpers "k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/interpreter"
	"github.com/flotilla-io/flotilla/internal/selection"
)

// Key identifies a template. GVK's version is the one the hub watches the kind under (see scopes).
type Key struct {
	GVK             schema.GroupVersionKind
	Namespace, Name string
}

// templateWorkers is how many templates are claimed at once, as many as the hub's other controllers run (in
// a burst of 100 Deployments on 2 members, 8 rather than 4 brought scheduled p99 from 9.1 s to 7.8 s).
const templateWorkers = 8

// unservedRetry is how soon the policies are looked at again while one selects a kind the hub does not serve.
// A CRD's arrival wakes them at once; this covers kinds that come from an aggregated API.
const unservedRetry = 30 * time.Second

// discoveryRetry is how soon they are looked at again when a CRD defines the kind but the hub's discovery
// does not list it yet: an established CRD can take a moment to appear there.
const discoveryRetry = time.Second

// Detector is the template reconciler.
type Detector struct {
	client client.Client
	// templates reads templates, and runs the watches of them that policies and bindings need.
	templates *Templates
	// live reads from the API server, for the rare read the cache may be behind on.
	live client.Reader
	// interpreter tells a template's replicas, with the customization of its kind if any.
	interpreter *interpreter.Interpreter
	mapper      meta.RESTMapper
	// examine hands template keys from the policy reconciler to the template reconciler's queue.
	examine chan event.TypedGenericEvent[Key]
	// statusEvents hands policies whose status may have changed to the policy status controller.
	statusEvents chan event.GenericEvent

	// syncMu makes one change of the watches at a time (watches.go).
	syncMu sync.Mutex
	mu     sync.Mutex
	// selected is where policies select each kind: the templates this detector claims and releases, and
	// whose events it takes.
	selected map[schema.GroupKind]scope
}

// Setup registers the detector: a controller for templates, fed by the template watches, a controller for
// policies that decides what is watched and hands the templates a policy change may affect to the first, and
// one that keeps the watches that bindings need. Each template is claimed on its own, so one that cannot be
// (its binding is refused) never holds up the others, and only the template reconciler writes bindings.
func Setup(mgr ctrl.Manager, templates *Templates) error {
	d := &Detector{client: mgr.GetClient(), templates: templates, live: mgr.GetAPIReader(), mapper: mgr.GetRESTMapper(), interpreter: interpreter.New(mgr.GetClient()),
		examine: make(chan event.TypedGenericEvent[Key], 1024), statusEvents: make(chan event.GenericEvent, 1024),
		selected: map[schema.GroupKind]scope{}}
	templates.driven = true
	c, err := controller.NewTyped[Key]("detector", mgr, controller.TypedOptions[Key]{Reconciler: d, MaxConcurrentReconciles: templateWorkers})
	if err != nil {
		return err
	}
	enqueue := handler.TypedFuncs[Key, Key]{
		GenericFunc: func(_ context.Context, e event.TypedGenericEvent[Key], q workqueue.TypedRateLimitingInterface[Key]) {
			q.Add(e.Object)
		},
	}
	if err := c.Watch(source.TypedChannel(d.examine, enqueue)); err != nil {
		return err
	}
	if err := WatchTemplates(templates, c, d.templateEvents); err != nil {
		return err
	}
	if err := d.setupStatus(mgr); err != nil {
		return err
	}
	if err := d.setupWatches(mgr); err != nil {
		return err
	}
	toAll := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: "policies"}}}
	})
	return ctrl.NewControllerManagedBy(mgr).Named("detector-policies").
		// Only spec changes (and creation, deletion): the status this detector writes changes nothing here.
		Watches(&policyv1alpha1.PropagationPolicy{}, toAll, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&policyv1alpha1.ClusterPropagationPolicy{}, toAll, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// Templates whose policy names dependentOverrides wait for those override policies to exist.
		Watches(&policyv1alpha1.OverridePolicy{}, toAll, builder.WithPredicates(createdOrDeleted)).
		Watches(&policyv1alpha1.ClusterOverridePolicy{}, toAll, builder.WithPredicates(createdOrDeleted)).
		// A schedulePriority naming a PriorityClass that does not exist takes effect when it is created.
		Watches(&schedulingv1.PriorityClass{}, toAll, builder.WithPredicates(createdOrDeleted)).
		// A policy may select a kind before its CRD exists; the CRD's arrival is when it takes effect.
		Watches(&apiextensionsv1.CustomResourceDefinition{}, toAll, builder.WithPredicates(crdEstablished)).
		// A customization or a webhook changes what a kind's templates need (their replicas). They change
		// rarely, and a template whose binding already says what it needs costs a cache read, not a write.
		Watches(&configv1alpha1.InterpreterCustomization{}, toAll).
		Watches(&configv1alpha1.InterpreterWebhookConfiguration{}, toAll).
		Complete(reconcile.Func(d.policiesChanged))
}

// createdOrDeleted passes an object's creation and deletion only.
var createdOrDeleted = predicate.Funcs{
	UpdateFunc:  func(event.UpdateEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// crdEstablished passes the events of a CRD that can make a kind servable: its creation, and an update that
// establishes it.
var crdEstablished = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		established := func(o client.Object) bool {
			crd, ok := o.(*apiextensionsv1.CustomResourceDefinition)
			return ok && apiextensionshelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established)
		}
		return !established(e.ObjectOld) && established(e.ObjectNew)
	},
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// templateEvents maps every event of a template a policy selects to its key; the templates only bindings
// need watched (those of kinds no policy selects) are not the detector's. An event that adds, moves or
// removes a claim also wakes the status of the policies concerned: the cache holds the change by the time its
// event comes, so the status counts it (woken by the claim's write instead, it often counted from a cache
// still without it).
func (d *Detector) templateEvents(gvk schema.GroupVersionKind) handler.TypedEventHandler[*unstructured.Unstructured, Key] {
	add := func(o *unstructured.Unstructured, q workqueue.TypedRateLimitingInterface[Key]) {
		if d.selects(gvk.GroupKind(), o.GetNamespace()) {
			q.Add(Key{GVK: gvk, Namespace: o.GetNamespace(), Name: o.GetName()})
		}
	}
	return handler.TypedFuncs[*unstructured.Unstructured, Key]{
		CreateFunc: func(ctx context.Context, e event.TypedCreateEvent[*unstructured.Unstructured], q workqueue.TypedRateLimitingInterface[Key]) {
			add(e.Object, q)
			d.notifyStatus(ctx, selection.ClaimOf(e.Object))
		},
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[*unstructured.Unstructured], q workqueue.TypedRateLimitingInterface[Key]) {
			if ContentChanged(e.ObjectOld, e.ObjectNew) {
				add(e.ObjectNew, q)
			}
			if before, after := selection.ClaimOf(e.ObjectOld), selection.ClaimOf(e.ObjectNew); !samePolicy(before, after) {
				d.notifyStatus(ctx, before)
				d.notifyStatus(ctx, after)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[*unstructured.Unstructured], q workqueue.TypedRateLimitingInterface[Key]) {
			add(e.Object, q)
			d.notifyStatus(ctx, selection.ClaimOf(e.Object))
		},
	}
}

// ContentChanged says whether an update changed more than the template's status and the bookkeeping every
// write brings: only then can its binding or the manifests rendered from it change. The detector and the
// binding controller both filter template events with it. (The status the binding status controller
// aggregates into the template would otherwise bring the binding back after every write.)
func ContentChanged(old, updated *unstructured.Unstructured) bool {
	return !equality.Semantic.DeepEqual(content(old), content(updated))
}

// content is a shallow copy of a template without its status and the bookkeeping every write changes.
func content(u *unstructured.Unstructured) map[string]any {
	c := maps.Clone(u.Object)
	delete(c, "status")
	if m, ok := c["metadata"].(map[string]any); ok {
		m = maps.Clone(m)
		delete(m, "resourceVersion")
		delete(m, "managedFields")
		c["metadata"] = m
	}
	return c
}

// policiesChanged makes the hub watch where policies select templates, and hands every template there, and
// every claimed one where they no longer do, to the template reconciler: a new policy may claim some, a
// changed or deleted one may release some. It writes nothing itself. (It used to claim the templates inline,
// racing the template reconciler: every binding one created from a stale cache failed the other with
// AlreadyExists, and the whole pass went into exponential backoff one binding at a time; 100 templates took
// more than 10 minutes.)
func (d *Detector) policiesChanged(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	policies, err := d.policies(ctx, "")
	if err != nil {
		return reconcile.Result{}, err
	}
	selected, unserved, err := d.scopes(selectedBy(policies))
	result := d.retryUnserved(ctx, policies, unserved)
	// Until the pass is through, the detector takes the events of what policies selected before as well:
	// those templates are being released.
	d.mu.Lock()
	d.selected = merge(d.selected, selected)
	sweep := d.selected
	d.mu.Unlock()
	errs := []error{err, d.syncWatches(ctx)}
	for gk, s := range sweep {
		for namespace := range s.namespaces {
			if err := d.examineAll(ctx, s.gvk, namespace, selected[gk]); err != nil {
				errs = append(errs, err)
			}
		}
	}
	// Once every template to release was handed over, what policies no longer select is no longer watched
	// (unless bindings there still need it).
	if err = errors.Join(errs...); err == nil {
		d.mu.Lock()
		d.selected = selected
		d.mu.Unlock()
		err = d.syncWatches(ctx)
	}
	for i := range policies {
		d.notifyStatus(ctx, &policies[i])
	}
	return result, err
}

// examineAll hands the templates of gvk in namespace ("": every namespace) to the template reconciler: all of
// them where policies select them now (now), and elsewhere only those claimed, by their labels or their
// binding (a kubectl replace drops the labels), which are to be released.
func (d *Detector) examineAll(ctx context.Context, gvk schema.GroupVersionKind, namespace string, now scope) error {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := d.templates.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return fmt.Errorf("listing %s: %w", gvk, err)
	}
	for i := range list.Items {
		item := &list.Items[i]
		if !now.covers(item.GetNamespace()) && selection.ClaimOf(item) == nil {
			b := newBinding(item)
			if err := d.client.Get(ctx, client.ObjectKeyFromObject(b), b); apierrors.IsNotFound(err) {
				continue
			} else if err != nil {
				return err
			}
		}
		select {
		case d.examine <- event.TypedGenericEvent[Key]{Object: Key{GVK: gvk, Namespace: item.GetNamespace(), Name: item.GetName()}}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// retryUnserved logs the selectors of kinds the hub does not serve yet, and says when to look again.
func (d *Detector) retryUnserved(ctx context.Context, policies []Policy, unserved sets.Set[schema.GroupKind]) reconcile.Result {
	var result reconcile.Result
	for _, p := range policies {
		for _, s := range p.Spec.ResourceSelectors {
			gv, err := schema.ParseGroupVersion(s.APIVersion)
			if err != nil || !unserved.Has(gv.WithKind(s.Kind).GroupKind()) {
				continue
			}
			ctrl.LoggerFrom(ctx).Info("policy selects a kind the hub does not serve yet", "kind", s.Kind, "apiVersion", s.APIVersion, "policy", p.Name)
			retry := unservedRetry
			if d.crdDefines(ctx, gv.WithKind(s.Kind).GroupKind()) {
				retry = discoveryRetry
			}
			if result.RequeueAfter == 0 || retry < result.RequeueAfter {
				result.RequeueAfter = retry
			}
		}
	}
	return result
}

// crdDefines reports whether a CRD in the cache defines gk.
func (d *Detector) crdDefines(ctx context.Context, gk schema.GroupKind) bool {
	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := d.client.List(ctx, crds); err != nil {
		return false
	}
	return slices.ContainsFunc(crds.Items, func(crd apiextensionsv1.CustomResourceDefinition) bool {
		return crd.Spec.Group == gk.Group && crd.Spec.Names.Kind == gk.Kind
	})
}

// policies lists the PropagationPolicies of namespace (all namespaces when empty) and every
// ClusterPropagationPolicy.
func (d *Detector) policies(ctx context.Context, namespace string) ([]Policy, error) {
	pps := &policyv1alpha1.PropagationPolicyList{}
	if err := d.client.List(ctx, pps, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	cpps := &policyv1alpha1.ClusterPropagationPolicyList{}
	if err := d.client.List(ctx, cpps); err != nil {
		return nil, err
	}
	out := make([]Policy, 0, len(pps.Items)+len(cpps.Items))
	for i := range pps.Items {
		if pps.Items[i].DeletionTimestamp == nil {
			out = append(out, Policy{Namespace: pps.Items[i].Namespace, Name: pps.Items[i].Name, Spec: &pps.Items[i].Spec})
		}
	}
	for i := range cpps.Items {
		if cpps.Items[i].DeletionTimestamp == nil {
			out = append(out, Policy{Name: cpps.Items[i].Name, Spec: &cpps.Items[i].Spec})
		}
	}
	return out, nil
}
