package detector

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/metrics"
	"github.com/flotilla-io/flotilla/internal/selection"
)

// Reconcile claims or releases one template and keeps its binding.
func (d *Detector) Reconcile(ctx context.Context, key Key) (reconcile.Result, error) {
	t := &unstructured.Unstructured{}
	t.SetGroupVersionKind(key.GVK)
	// The watch covering the template, or the API server when none does: a template whose watch stopped
	// is read from the API server, never taken for gone.
	if err := d.templates.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: key.Name}, t); apierrors.IsNotFound(err) {
		t.SetNamespace(key.Namespace)
		t.SetName(key.Name)
		return reconcile.Result{}, d.deleteBinding(ctx, t)
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
	policy := selection.Choose(t, policies, selection.ClaimOf(t))
	if policy == nil {
		return reconcile.Result{}, d.release(ctx, t)
	}
	// dependentOverrides: the template waits, binding and claim as they are, until every named override
	// policy exists (their creation starts a policy pass that brings it back); the policy's status says so.
	if missing, err := d.missingOverrides(ctx, *policy); err != nil || len(missing) > 0 {
		return reconcile.Result{}, err
	}
	// The propagation metric starts from here: the first time the hub sees this generation of a template
	// a policy claims.
	metrics.Propagation.Seen(t.GetUID(), t.GetGeneration())
	// The binding first: the claim's label change brings the template back, and by then the cache most
	// likely holds the binding, so that pass writes nothing.
	result, err := d.ensureBinding(ctx, t, policy)
	if err != nil || result.RequeueAfter > 0 {
		return result, err
	}
	return reconcile.Result{}, d.claim(ctx, t, policy)
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
	return d.client.Patch(ctx, t, client.RawPatch("application/merge-patch+json", data), client.FieldOwner(fieldManager))
}

// deleteBinding deletes the binding of a template that is gone, unless the cached binding has an owner
// reference: then the garbage collector deletes it (in a burst of deletes it came first almost every time, and
// the detector's delete of a binding being deleted already was one write per object for nothing). A binding
// not cached (it may be new) is deleted all the same.
func (d *Detector) deleteBinding(ctx context.Context, t *unstructured.Unstructured) error {
	binding := newBinding(t)
	err := d.client.Get(ctx, client.ObjectKeyFromObject(binding), binding)
	if err == nil && (binding.GetDeletionTimestamp() != nil || len(binding.GetOwnerReferences()) > 0) {
		return nil
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return client.IgnoreNotFound(d.client.Delete(ctx, binding))
}
