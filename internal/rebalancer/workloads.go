package rebalancer

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// workloads is every template of the Rebalancer: those it names, then those its selector matches that it
// does not name. A selector that cannot select anything is reported in an event, not retried: the spec
// cannot change.
func (r *Controller) workloads(ctx context.Context, rb *workv1alpha1.Rebalancer) ([]workv1alpha1.WorkloadReference, error) {
	out := slices.Clone(rb.Spec.Workloads)
	sel := rb.Spec.Selector
	if sel == nil {
		return dedupe(out), nil
	}
	labels, err := metav1.LabelSelectorAsSelector(&sel.LabelSelector)
	if err != nil {
		r.Recorder.Eventf(rb, nil, corev1.EventTypeWarning, ReasonBadSelector, "Rebalance", "spec.selector.labelSelector: %v", err)
		return dedupe(out), nil
	}
	gv, err := schema.ParseGroupVersion(sel.APIVersion)
	if err != nil {
		r.Recorder.Eventf(rb, nil, corev1.EventTypeWarning, ReasonBadSelector, "Rebalance", "spec.selector.apiVersion: %v", err)
		return dedupe(out), nil
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gv.WithKind(sel.Kind + "List"))
	err = r.Reader.List(ctx, list, client.InNamespace(sel.Namespace), client.MatchingLabelsSelector{Selector: labels})
	if meta.IsNoMatchError(err) {
		r.Recorder.Eventf(rb, nil, corev1.EventTypeWarning, ReasonBadSelector, "Rebalance", "spec.selector: the hub does not serve %s %s", sel.APIVersion, sel.Kind)
		return dedupe(out), nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing %s %s: %w", sel.APIVersion, sel.Kind, err)
	}
	for _, t := range list.Items {
		out = append(out, workv1alpha1.WorkloadReference{APIVersion: sel.APIVersion, Kind: sel.Kind, Namespace: t.GetNamespace(), Name: t.GetName()})
	}
	return dedupe(out), nil
}

// dedupe drops repeated references, keeping the first.
func dedupe(refs []workv1alpha1.WorkloadReference) []workv1alpha1.WorkloadReference {
	seen := map[workv1alpha1.WorkloadReference]bool{}
	return slices.DeleteFunc(refs, func(w workv1alpha1.WorkloadReference) bool {
		dup := seen[w]
		seen[w] = true
		return dup
	})
}

// trigger sets spec.rescheduleTriggeredAt of the template's binding to the Rebalancer's creation time (and
// only that field) and says how it went. An error is returned only when trying again may help; a missing
// binding is NotFound only when the API server says so.
func (r *Controller) trigger(ctx context.Context, rb *workv1alpha1.Rebalancer, w workv1alpha1.WorkloadReference) (workv1alpha1.ObservedWorkload, error) {
	result := func(res workv1alpha1.RebalanceResult, format string, args ...any) (workv1alpha1.ObservedWorkload, error) {
		return workv1alpha1.ObservedWorkload{Workload: w, Result: res, Message: fmt.Sprintf(format, args...)}, nil
	}
	gv, err := schema.ParseGroupVersion(w.APIVersion)
	if err != nil {
		return result(workv1alpha1.RebalanceFailed, "apiVersion: %v", err)
	}
	gk := schema.GroupKind{Group: gv.Group, Kind: w.Kind}
	mapping, err := r.Mapper.RESTMapping(gk, gv.Version)
	if meta.IsNoMatchError(err) {
		return result(workv1alpha1.RebalanceNotFound, "the hub does not serve %s %s", w.APIVersion, w.Kind)
	}
	if err != nil {
		return workv1alpha1.ObservedWorkload{}, err
	}
	namespaced := mapping.Scope.Name() == meta.RESTScopeNameNamespace
	switch {
	case namespaced && w.Namespace == "":
		return result(workv1alpha1.RebalanceFailed, "%s is namespaced: the reference needs a namespace", w.Kind)
	case !namespaced && w.Namespace != "":
		return result(workv1alpha1.RebalanceFailed, "%s is cluster-scoped: the reference must not have a namespace", w.Kind)
	}

	var b workv1alpha1.Binding = &workv1alpha1.ClusterResourceBinding{}
	if namespaced {
		b = &workv1alpha1.ResourceBinding{}
	}
	bindingKey := client.ObjectKey{Namespace: w.Namespace, Name: workv1alpha1.BindingName(gk, w.Name)}
	err = r.Reader.Get(ctx, bindingKey, b)
	if apierrors.IsNotFound(err) {
		return result(workv1alpha1.RebalanceNotFound, "no binding %s: the template does not exist or no policy places it", key(bindingKey.Namespace, bindingKey.Name))
	}
	if err != nil {
		return workv1alpha1.ObservedWorkload{}, err
	}
	if b.GetDeletionTimestamp() != nil {
		return result(workv1alpha1.RebalanceFailed, "the binding %s is being deleted", key(bindingKey.Namespace, bindingKey.Name))
	}
	at := rb.CreationTimestamp
	if t := b.BindingSpec().RescheduleTriggeredAt; t != nil && !t.Before(&at) {
		return result(workv1alpha1.RebalanceSuccessful, "")
	}
	// A merge patch of the one field, with the binding's UID as a precondition: the detector owns the rest
	// of the spec, and a binding deleted and created again since the read is another template's binding.
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": b.GetUID()},
		"spec":     map[string]any{"rescheduleTriggeredAt": at},
	})
	if err != nil {
		return workv1alpha1.ObservedWorkload{}, err
	}
	err = r.Client.Patch(ctx, b, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(fieldManager))
	switch {
	case err == nil:
		return result(workv1alpha1.RebalanceSuccessful, "")
	case apierrors.IsNotFound(err):
		return result(workv1alpha1.RebalanceNotFound, "the binding %s was deleted", key(bindingKey.Namespace, bindingKey.Name))
	case apierrors.IsInvalid(err), apierrors.IsForbidden(err), apierrors.IsBadRequest(err):
		return result(workv1alpha1.RebalanceFailed, "patching the binding %s: %v", key(bindingKey.Namespace, bindingKey.Name), err)
	}
	return workv1alpha1.ObservedWorkload{}, err
}

// key prints a namespace/name, or a name alone for cluster-scoped objects.
func key(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}
