package detector

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

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
// the member objects instead of deleting them. The binding is looked for even when the template carries no
// claim: a `kubectl replace` drops the claim labels along with everything else the manifest does not name.
func (d *Detector) release(ctx context.Context, t *unstructured.Unstructured) error {
	binding := newBinding(t)
	if err := d.client.Get(ctx, client.ObjectKeyFromObject(binding), binding); err == nil {
		binding.SetAnnotations(map[string]string{workv1alpha1.AnnotationRelease: "true"})
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
	key := client.ObjectKeyFromObject(binding)
	err := d.client.Get(ctx, key, binding)
	if apierrors.IsNotFound(err) {
		*binding.(workv1alpha1.Object).BindingSpec() = want
		binding.SetOwnerReferences([]metav1.OwnerReference{{
			APIVersion: t.GetAPIVersion(), Kind: t.GetKind(), Name: t.GetName(), UID: t.GetUID(), BlockOwnerDeletion: ptr.To(true),
		}})
		binding.SetFinalizers([]string{workv1alpha1.FinalizerBinding})
		if err = d.client.Create(ctx, binding); !apierrors.IsAlreadyExists(err) {
			return err
		}
		// Created by an earlier pass that the cache has not caught up with: read it from the API server and
		// bring it up to date like any other.
		binding = newBinding(t)
		err = d.reader.Get(ctx, key, binding)
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
