package detector

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/interpreter"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

// fieldManager owns the binding fields the detector derives from the template and its policy.
var fieldManager = workv1alpha1.ControllerFieldManager("detector")

// deletingRetry is how soon a template whose binding is still being deleted (released, or left by a template
// of the same name) is looked at again, to get its new binding once the old one is gone.
const deletingRetry = time.Second

// desiredSpec is the part of a binding's spec the detector owns: what the template is and needs, and what its
// policy says. Clusters and eviction tasks are the scheduler's; rescheduleTriggeredAt is a person's.
// A customization whose replicaResource fails leaves the replicas as the binding has them (none for a new
// binding): the binding-status controller reports the failure on the binding, and nothing else stops.
func (d *Detector) desiredSpec(ctx context.Context, t *unstructured.Unstructured, p *Policy, current workv1alpha1.Binding) (workv1alpha1.ResourceBindingSpec, error) {
	want := p.BindingSpec(t)
	priority, err := d.schedulePriority(ctx, p)
	if err != nil {
		return want, err
	}
	want.SchedulePriority = priority
	replicas, requirements, ok, err := d.interpreter.Requirements(ctx, t)
	var failed *interpreter.Error
	switch {
	case errors.As(err, &failed):
		if current != nil {
			want.Replicas, want.ReplicaRequirements = current.BindingSpec().Replicas, current.BindingSpec().ReplicaRequirements.DeepCopy()
		}
	case err != nil:
		return want, err
	case ok:
		want.Replicas = replicas
		if requirements != nil {
			requirements.Namespace = t.GetNamespace()
			want.ReplicaRequirements = requirements
		}
	}
	return want, nil
}

// ensureBinding makes the template's binding carry the spec its policy derives, with the template as its
// owner and the binding finalizer, by one server-side apply that creates or updates it. It writes nothing
// when the cached binding already has all that. (It used to read the binding from the cache and create it
// when missing: in a burst the cache was often behind, and 0.74 of 1.74 creates per Deployment failed with
// AlreadyExists.)
func (d *Detector) ensureBinding(ctx context.Context, t *unstructured.Unstructured, p *Policy) (reconcile.Result, error) {
	lazy, err := lazyMark(t, p)
	if err != nil {
		return reconcile.Result{}, err
	}
	current := newBinding(t)
	err = d.client.Get(ctx, client.ObjectKeyFromObject(current), current)
	if lazy != "" && (apierrors.IsNotFound(err) || !claimedBy(t, p)) {
		// The cache may not yet have seen the template's claim or a binding created moments ago. Under a
		// Lazy policy, applying the policy's current spec then would be the very change that must wait for
		// the template's: read both from the API server.
		if t, err = d.liveTemplate(ctx, t); err != nil {
			return reconcile.Result{}, err
		}
		if lazy, err = lazyMark(t, p); err != nil {
			return reconcile.Result{}, err
		}
		err = d.live.Get(ctx, client.ObjectKeyFromObject(current), current)
	}
	var existing workv1alpha1.Binding
	if err == nil {
		existing = current
	}
	want, werr := d.desiredSpec(ctx, t, p, existing)
	if werr != nil {
		return reconcile.Result{}, werr
	}
	switch {
	case err == nil && current.GetDeletionTimestamp() != nil:
		// A binding being deleted may not take its finalizer again: the new one is applied once it is gone.
		return reconcile.Result{RequeueAfter: deletingRetry}, nil
	case err == nil && lazy != "" && claimedBy(t, p) && current.GetAnnotations()[workv1alpha1.AnnotationLazyTemplate] == lazy:
		// Lazy activation: the template has not changed since its binding was derived, so a change of its
		// policy waits for the template's next change.
		return reconcile.Result{}, nil
	case err == nil && upToDate(current, t, want, lazy, clusterPolicy(p, t)):
		return reconcile.Result{}, nil
	case err != nil && !apierrors.IsNotFound(err):
		return reconcile.Result{}, err
	}
	obj, err := d.applyObject(current, t, want, clusterPolicy(p, t))
	if err != nil {
		return reconcile.Result{}, err
	}
	if lazy != "" {
		obj.SetAnnotations(map[string]string{workv1alpha1.AnnotationLazyTemplate: lazy})
	}
	return reconcile.Result{}, d.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj),
		client.FieldOwner(fieldManager), client.ForceOwnership)
}

// liveTemplate reads template t again from the API server.
func (d *Detector) liveTemplate(ctx context.Context, t *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	fresh := &unstructured.Unstructured{}
	fresh.SetGroupVersionKind(t.GroupVersionKind())
	return fresh, d.live.Get(ctx, client.ObjectKeyFromObject(t), fresh)
}

// clusterPolicy names the ClusterPropagationPolicy p when it places namespaced template t; "" for a
// PropagationPolicy and for a cluster-scoped template. A ResourceBinding carries it as a label: the
// scheduler confines the binding to its namespace's ClusterSets unless an admin's cluster-wide policy placed
// it, and the template's claim label is written only after the binding.
func clusterPolicy(p *Policy, t *unstructured.Unstructured) string {
	if p.Cluster() && t.GetNamespace() != "" {
		return p.Name
	}
	return ""
}

// upToDate reports whether a binding already has the detector's part: the derived spec, the template as
// owner, the finalizer, the lazy activation mark (lazy, empty when the policy is not Lazy) and the
// ClusterPropagationPolicy label (admin, empty for a PropagationPolicy).
func upToDate(b workv1alpha1.Binding, t *unstructured.Unstructured, want workv1alpha1.ResourceBindingSpec, lazy, admin string) bool {
	spec := *b.BindingSpec()
	spec.Clusters, spec.GracefulEvictionTasks, spec.RescheduleTriggeredAt = nil, nil, nil
	return equality.Semantic.DeepEqual(spec, want) && b.GetAnnotations()[workv1alpha1.AnnotationLazyTemplate] == lazy &&
		b.GetLabels()[policyv1alpha1.LabelClusterPropagationPolicy] == admin &&
		slices.Contains(b.GetFinalizers(), workv1alpha1.FinalizerBinding) &&
		slices.ContainsFunc(b.GetOwnerReferences(), func(o metav1.OwnerReference) bool { return o.UID == t.GetUID() })
}

// applyObject is what the detector applies to a binding: only the fields it owns. The owner reference and
// finalizer are applied every time, not just at creation: a server-side apply that leaves out a field the
// manager owns removes it.
func (d *Detector) applyObject(b client.Object, t *unstructured.Unstructured, want workv1alpha1.ResourceBindingSpec, admin string) (*unstructured.Unstructured, error) {
	spec, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&want)
	if err != nil {
		return nil, err
	}
	obj, err := scheme.ApplyObject(d.client, b, map[string]any{"spec": spec})
	if err != nil {
		return nil, err
	}
	obj.SetOwnerReferences([]metav1.OwnerReference{{
		APIVersion: t.GetAPIVersion(), Kind: t.GetKind(), Name: t.GetName(), UID: t.GetUID(), BlockOwnerDeletion: ptr.To(true),
	}})
	obj.SetFinalizers([]string{workv1alpha1.FinalizerBinding})
	if admin != "" {
		obj.SetLabels(map[string]string{policyv1alpha1.LabelClusterPropagationPolicy: admin})
	}
	return obj, nil
}

// release stops managing a template: its binding is deleted with the release mark, so its Works let go of
// the member objects instead of deleting them. The binding is looked for even when the template carries no
// claim: a `kubectl replace` drops the claim labels along with everything else the manifest does not name.
// The mark is merged into the annotations, so nothing else of the binding is written back.
func (d *Detector) release(ctx context.Context, t *unstructured.Unstructured) error {
	binding := newBinding(t)
	if err := d.client.Get(ctx, client.ObjectKeyFromObject(binding), binding); err == nil {
		if binding.GetAnnotations()[workv1alpha1.AnnotationRelease] != "true" {
			patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{workv1alpha1.AnnotationRelease: "true"}}})
			if err != nil {
				return err
			}
			err = d.client.Patch(ctx, binding, client.RawPatch("application/merge-patch+json", patch), client.FieldOwner(fieldManager))
			if client.IgnoreNotFound(err) != nil {
				return err
			}
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

// newBinding returns an empty binding object, named after the template, of the right scope.
func newBinding(t *unstructured.Unstructured) workv1alpha1.Binding {
	name := workv1alpha1.BindingName(t.GroupVersionKind().GroupKind(), t.GetName())
	if t.GetNamespace() == "" {
		return &workv1alpha1.ClusterResourceBinding{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	return &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: t.GetNamespace(), Name: name}}
}
