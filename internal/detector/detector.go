// Package detector matches templates (ordinary objects on the hub) to the policy that places them, and keeps
// one ResourceBinding (namespaced template) or ClusterResourceBinding (cluster-scoped template) per claimed
// template. It watches only the kinds that some policy selects. A template that no policy matches any more is
// released: its binding goes, its Works are released, and its objects keep running in the members.
package detector

import (
	"context"
	"fmt"
	"hash/fnv"
	"maps"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// AnnotationRelease on a binding being deleted says its member objects stay: the template was released, not
// deleted.
const AnnotationRelease = "work.flotilla.io/release"

// Key identifies a template.
type Key struct {
	GVK             schema.GroupVersionKind
	Namespace, Name string
}

// Detector is the template reconciler.
type Detector struct {
	client client.Client
	cache  cache.Cache
	mapper meta.RESTMapper
	ctrl   controller.TypedController[Key]

	mu      sync.Mutex
	watched map[schema.GroupVersionKind]bool
}

// Setup registers the detector: a controller for templates, fed by a watch per selected kind, and a
// controller for policies that adds those watches and re-examines the templates a policy change affects.
func Setup(mgr ctrl.Manager) error {
	d := &Detector{client: mgr.GetClient(), cache: mgr.GetCache(), mapper: mgr.GetRESTMapper(), watched: map[schema.GroupVersionKind]bool{}}
	c, err := controller.NewTyped[Key]("detector", mgr, controller.TypedOptions[Key]{Reconciler: d})
	if err != nil {
		return err
	}
	d.ctrl = c
	toAll := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: "policies"}}}
	})
	return ctrl.NewControllerManagedBy(mgr).Named("detector-policies").
		Watches(&policyv1alpha1.PropagationPolicy{}, toAll).
		Watches(&policyv1alpha1.ClusterPropagationPolicy{}, toAll).
		Complete(reconcile.Func(d.policiesChanged))
}

// templateEvents maps every event of a template to its key.
func templateEvents(gvk schema.GroupVersionKind) handler.TypedEventHandler[*unstructured.Unstructured, Key] {
	add := func(o *unstructured.Unstructured, q workqueue.TypedRateLimitingInterface[Key]) {
		q.Add(Key{GVK: gvk, Namespace: o.GetNamespace(), Name: o.GetName()})
	}
	return handler.TypedFuncs[*unstructured.Unstructured, Key]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[*unstructured.Unstructured], q workqueue.TypedRateLimitingInterface[Key]) {
			add(e.Object, q)
		},
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[*unstructured.Unstructured], q workqueue.TypedRateLimitingInterface[Key]) {
			if contentChanged(e.ObjectOld, e.ObjectNew) {
				add(e.ObjectNew, q)
			}
		},
		DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[*unstructured.Unstructured], q workqueue.TypedRateLimitingInterface[Key]) {
			add(e.Object, q)
		},
	}
}

// contentChanged says whether an update changed more than the template's status and the bookkeeping every
// write brings: only then can its binding or the manifests rendered from it change. (The status the binding
// controller aggregates into the template would otherwise bring the binding back after every write.)
func contentChanged(old, updated *unstructured.Unstructured) bool {
	content := func(u *unstructured.Unstructured) map[string]any {
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
	return !equality.Semantic.DeepEqual(content(old), content(updated))
}

// policiesChanged makes sure every selected kind is watched and re-examines every template of those kinds:
// a new policy may claim some, a changed or deleted one may release some.
func (d *Detector) policiesChanged(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	policies, err := d.policies(ctx, "")
	if err != nil {
		return reconcile.Result{}, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, p := range policies {
		for _, s := range p.Spec.ResourceSelectors {
			gv, err := schema.ParseGroupVersion(s.APIVersion)
			if err != nil {
				continue
			}
			gvk := gv.WithKind(s.Kind)
			if d.watched[gvk] {
				continue
			}
			if _, err := d.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
				ctrl.LoggerFrom(ctx).Info("policy selects a kind the hub does not serve yet", "kind", gvk.String(), "policy", p.Name)
				continue
			}
			obj := &unstructured.Unstructured{}
			obj.SetGroupVersionKind(gvk)
			if err := d.ctrl.Watch(source.TypedKind(d.cache, obj, templateEvents(gvk))); err != nil {
				return reconcile.Result{}, fmt.Errorf("watching %s: %w", gvk, err)
			}
			d.watched[gvk] = true
		}
	}
	// The watches deliver every existing template as a create event once; templates of kinds watched
	// before are examined again through a generic pass over the cache.
	for gvk := range d.watched {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := d.client.List(ctx, list); err != nil {
			return reconcile.Result{}, err
		}
		for _, item := range list.Items {
			if _, err := d.Reconcile(ctx, Key{GVK: gvk, Namespace: item.GetNamespace(), Name: item.GetName()}); err != nil {
				return reconcile.Result{}, err
			}
		}
	}
	return reconcile.Result{}, nil
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

// Reconcile claims or releases one template and keeps its binding.
func (d *Detector) Reconcile(ctx context.Context, key Key) (reconcile.Result, error) {
	t := &unstructured.Unstructured{}
	t.SetGroupVersionKind(key.GVK)
	if err := d.client.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: key.Name}, t); apierrors.IsNotFound(err) {
		// The template is gone: its binding goes now. (Its owner reference lets the garbage collector do the
		// same, but only seconds later.)
		t.SetNamespace(key.Namespace)
		t.SetName(key.Name)
		return reconcile.Result{}, client.IgnoreNotFound(d.client.Delete(ctx, newBinding(t)))
	} else if err != nil {
		return reconcile.Result{}, err
	}
	if t.GetDeletionTimestamp() != nil {
		return reconcile.Result{}, nil
	}
	policies, err := d.policies(ctx, t.GetNamespace())
	if err != nil {
		return reconcile.Result{}, err
	}
	policy := Choose(t, policies, claimOf(t))
	if policy == nil {
		return reconcile.Result{}, d.release(ctx, t)
	}
	if err := d.claim(ctx, t, policy); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, d.ensureBinding(ctx, t, policy)
}

// claimOf reads the policy that claimed a template from its labels.
func claimOf(t *unstructured.Unstructured) *Policy {
	l := t.GetLabels()
	if name := l[policyv1alpha1.LabelClusterPropagationPolicy]; name != "" {
		return &Policy{Name: name}
	}
	if name := l[policyv1alpha1.LabelPropagationPolicyName]; name != "" {
		return &Policy{Namespace: l[policyv1alpha1.LabelPropagationPolicyNamespace], Name: name}
	}
	return nil
}

// claim records the policy on the template's labels.
func (d *Detector) claim(ctx context.Context, t *unstructured.Unstructured, p *Policy) error {
	want := map[string]any{
		policyv1alpha1.LabelPropagationPolicyNamespace: nil,
		policyv1alpha1.LabelPropagationPolicyName:      nil,
		policyv1alpha1.LabelClusterPropagationPolicy:   nil,
	}
	if p.Cluster() {
		want[policyv1alpha1.LabelClusterPropagationPolicy] = p.Name
	} else {
		want[policyv1alpha1.LabelPropagationPolicyNamespace] = p.Namespace
		want[policyv1alpha1.LabelPropagationPolicyName] = p.Name
	}
	return d.patchLabels(ctx, t, want)
}

// patchLabels merge-patches the template's labels (nil removes one) when they differ.
func (d *Detector) patchLabels(ctx context.Context, t *unstructured.Unstructured, want map[string]any) error {
	current := t.GetLabels()
	changed := false
	for k, v := range want {
		old, has := current[k]
		if (v == nil && has) || (v != nil && old != v) {
			changed = true
		}
	}
	if !changed {
		return nil
	}
	patch := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"labels": want}}}
	data, err := patch.MarshalJSON()
	if err != nil {
		return err
	}
	return d.client.Patch(ctx, t, client.RawPatch("application/merge-patch+json", data))
}

// release stops managing a template: its binding is deleted with the release mark, so its Works let go of
// the member objects instead of deleting them.
func (d *Detector) release(ctx context.Context, t *unstructured.Unstructured) error {
	if claimOf(t) == nil {
		return nil
	}
	binding := newBinding(t)
	if err := d.client.Get(ctx, client.ObjectKeyFromObject(binding), binding); err == nil {
		binding.SetAnnotations(map[string]string{AnnotationRelease: "true"})
		if err := d.client.Update(ctx, binding); err != nil {
			return err
		}
		if err := d.client.Delete(ctx, binding); client.IgnoreNotFound(err) != nil {
			return err
		}
	} else if !apierrors.IsNotFound(err) {
		return err
	}
	return d.patchLabels(ctx, t, map[string]any{
		policyv1alpha1.LabelPropagationPolicyNamespace: nil,
		policyv1alpha1.LabelPropagationPolicyName:      nil,
		policyv1alpha1.LabelClusterPropagationPolicy:   nil,
	})
}

// ensureBinding creates or updates the template's binding from the policy.
func (d *Detector) ensureBinding(ctx context.Context, t *unstructured.Unstructured, p *Policy) error {
	want := workv1alpha1.ResourceBindingSpec{
		Resource: workv1alpha1.ObjectReference{
			APIVersion: t.GetAPIVersion(), Kind: t.GetKind(), Namespace: t.GetNamespace(), Name: t.GetName(),
			UID: t.GetUID(), ResourceVersion: t.GetResourceVersion(),
		},
		PropagateDeps:               p.Spec.PropagateDeps,
		Placement:                   p.Spec.Placement.DeepCopy(),
		SchedulerName:               p.Spec.SchedulerName,
		Failover:                    p.Spec.Failover.DeepCopy(),
		ConflictResolution:          p.Spec.ConflictResolution,
		Suspension:                  p.Spec.Suspension.DeepCopy(),
		PreserveResourcesOnDeletion: p.Spec.PreserveResourcesOnDeletion,
	}
	if replicas, requests, ok := interpreter.Replicas(t); ok {
		want.Replicas = replicas
		if requests != nil {
			want.ReplicaRequirements = &workv1alpha1.ReplicaRequirements{ResourceRequest: requests, Namespace: t.GetNamespace()}
		}
	}
	binding := newBinding(t)
	err := d.client.Get(ctx, client.ObjectKeyFromObject(binding), binding)
	if apierrors.IsNotFound(err) {
		*binding.(workv1alpha1.Object).BindingSpec() = want
		binding.SetOwnerReferences([]metav1.OwnerReference{{
			APIVersion: t.GetAPIVersion(), Kind: t.GetKind(), Name: t.GetName(), UID: t.GetUID(), BlockOwnerDeletion: ptr.To(true),
		}})
		binding.SetFinalizers([]string{workv1alpha1.FinalizerBinding})
		return d.client.Create(ctx, binding)
	}
	if err != nil {
		return err
	}
	spec := binding.(workv1alpha1.Object).BindingSpec()
	want.Clusters = spec.Clusters // the scheduler's
	want.GracefulEvictionTasks = spec.GracefulEvictionTasks
	want.RescheduleTriggeredAt = spec.RescheduleTriggeredAt
	if equality.Semantic.DeepEqual(*spec, want) {
		return nil
	}
	*spec = want
	return d.client.Update(ctx, binding)
}

// newBinding returns an empty binding object, named after the template, of the right scope.
func newBinding(t *unstructured.Unstructured) client.Object {
	name := BindingName(t.GroupVersionKind().GroupKind(), t.GetName())
	if t.GetNamespace() == "" {
		return &workv1alpha1.ClusterResourceBinding{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	return &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: t.GetNamespace(), Name: name}}
}

// BindingName is NAME-KIND for the core and apps groups and NAME-KIND-HASH for every other group, so two kinds
// (or two groups' kinds) of one name never share a binding.
func BindingName(gk schema.GroupKind, name string) string {
	n := name + "-" + strings.ToLower(gk.Kind)
	if gk.Group == "" || gk.Group == "apps" {
		return n
	}
	h := fnv.New32a()
	h.Write([]byte(gk.Group))
	return fmt.Sprintf("%s-%08x", n, h.Sum32())
}
