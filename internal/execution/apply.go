package execution

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/metrics"
)

// ownership is what the member holds under a manifest's name, as far as applying it goes.
type ownership int

const (
	// absent: nothing there; the apply creates it.
	absent ownership = iota
	// owned: the object this Work applied before (it carries the Work's annotation).
	owned
	// adopted: an object Flotilla did not create for this Work, taken over on purpose and recorded so.
	adopted
	// shared: a dependency another Work placed here and manages; this Work leaves it to that one.
	shared
)

// conflictError refuses an object Flotilla may not take over.
type conflictError struct{ msg string }

func (e *conflictError) Error() string { return e.msg }

var (
	namespaceKind = schema.GroupKind{Kind: "Namespace"}
	crdKind       = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}
	pvcKind       = schema.GroupKind{Kind: "PersistentVolumeClaim"}
)

// claim decides whether the Work may apply obj over existing, what reading it from the member returned.
// Only a NotFound means nothing is there: any other read error is returned to be retried, never taken for
// "absent" (a forced apply would then take over whatever is there). An existing object is the Work's own
// when it carries the Work's mark of this hub, made for that object (mark.go; also after an unjoin that
// could not reach the member and a re-join of the cluster: the Work of the same binding has the same name);
// a namespace Flotilla created implicitly, or anything under conflictResolution: Overwrite, is adopted;
// anything else is refused, another hub's object or one carrying a copied mark included.
func claim(hubID string, w *workv1alpha1.Work, obj, existing *unstructured.Unstructured, getErr error) (ownership, error) {
	if apierrors.IsNotFound(getErr) {
		return absent, nil
	}
	if getErr != nil {
		return 0, fmt.Errorf("reading %s %s from the member: %w", obj.GetKind(), client.ObjectKeyFromObject(obj), getErr)
	}
	managed := existing.GetLabels()[workv1alpha1.LabelManagedBy] == workv1alpha1.ManagedByValue
	named := existing.GetAnnotations()[workv1alpha1.AnnotationWork]
	manager, _ := markedBy(hubID, existing)
	switch {
	case owns(hubID, w, existing):
		return owned, nil
	case obj.GetAnnotations()[workv1alpha1.AnnotationDependency] == "true" && managed && manager != "" && manager != workRef(w):
		return shared, nil
	case w.Spec.ConflictResolution == policyv1alpha1.ConflictOverwrite:
		return adopted, nil
	case existing.GroupVersionKind().GroupKind() == namespaceKind && managed && named == "":
		return adopted, nil // created by Flotilla for other objects before its Namespace template came
	}
	why := "Flotilla did not create it"
	switch {
	case manager != "" && manager != workRef(w):
		why = "Work " + manager + " manages it"
	case named != "":
		why = "its mark naming Work " + named + " is not one this hub made for it (another hub's, copied from another object, " +
			"or an earlier version's on an object the Work did not apply)"
	}
	return 0, &conflictError{fmt.Sprintf("%s %s already exists in the member and %s; conflictResolution: Overwrite adopts it",
		obj.GetKind(), client.ObjectKeyFromObject(obj), why)}
}

// inBindingNamespace refuses a manifest of a namespaced binding that would land outside the binding's
// namespace: whoever may edit one namespace on the hub reaches only that namespace in the members, whatever
// a template or an override says. Works of cluster bindings (no binding namespace) may place anything.
func inBindingNamespace(w *workv1alpha1.Work, obj *unstructured.Unstructured, mapping *meta.RESTMapping) error {
	ns := w.Labels[workv1alpha1.LabelBindingNamespace]
	if ns == "" {
		return nil
	}
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		return fmt.Errorf("%s %s is cluster-scoped, but the Work belongs to a binding in namespace %s, which places objects only there",
			obj.GetKind(), obj.GetName(), ns)
	}
	if obj.GetNamespace() != ns {
		return fmt.Errorf("%s %s is in namespace %q, but the Work belongs to a binding in namespace %s, which places objects only there",
			obj.GetKind(), obj.GetName(), obj.GetNamespace(), ns)
	}
	return nil
}

// apply applies one manifest and reflects the object's status and health, at most statusLimit bytes of it.
// It also returns the object's generation in the member.
func (e *Executor) apply(ctx context.Context, m *Member, w *workv1alpha1.Work, obj *unstructured.Unstructured, ordinal int,
	conditions []metav1.Condition, statusLimit int) (workv1alpha1.ManifestStatus, int64) {
	ms := workv1alpha1.ManifestStatus{Identifier: identifier(obj, ordinal), Health: workv1alpha1.ResourceUnknown, Conditions: conditions}
	fail := func(reason string, err error) (workv1alpha1.ManifestStatus, int64) {
		cluster, _ := clusterv1alpha1.ClusterOfNamespace(w.Namespace)
		metrics.WorkApplyErrors.WithLabelValues(cluster, reason).Inc()
		meta.SetStatusCondition(&ms.Conditions, metav1.Condition{Type: workv1alpha1.WorkConditionApplied, Status: metav1.ConditionFalse, Reason: reason, Message: err.Error()})
		return ms, 0
	}
	gvk := obj.GroupVersionKind()
	ri, mapping, err := m.resource(gvk, obj.GetNamespace())
	if err != nil {
		return fail(ReasonApplyFailed, fmt.Errorf("the member does not serve %s: %w", gvk, err))
	}
	ms.Identifier.Resource = mapping.Resource.Resource
	if err := inBindingNamespace(w, obj, mapping); err != nil {
		return fail(ReasonNamespaceMismatch, err)
	}
	config := w.Spec.ManifestConfig(gvk.Group, mapping.Resource.Resource, obj.GetNamespace(), obj.GetName())
	strategy := strategyOf(config)
	if strategy.kind == workv1alpha1.UpdateReadOnly {
		return readOnly(ctx, m, ri, obj, ms, config, statusLimit)
	}
	namespaced := mapping.Scope.Name() == meta.RESTScopeNameNamespace
	if namespaced {
		if err := m.ensureNamespace(ctx, obj.GetNamespace()); err != nil {
			return fail(ReasonApplyFailed, fmt.Errorf("creating namespace %s: %w", obj.GetNamespace(), err))
		}
	}
	existing, err := ri.Get(ctx, obj.GetName(), metav1.GetOptions{})
	how, err := claim(e.HubID, w, obj, existing, err)
	var conflict *conflictError
	switch {
	case errors.As(err, &conflict):
		return fail(ReasonConflictAbort, err)
	case err != nil:
		return fail(ReasonApplyFailed, err)
	case how == shared:
		ms.Applied, ms.Health = true, workv1alpha1.ResourceHealthy
		meta.SetStatusCondition(&ms.Conditions, metav1.Condition{Type: workv1alpha1.WorkConditionApplied, Status: metav1.ConditionTrue,
			Reason: "Shared", Message: "managed by Work " + existing.GetAnnotations()[workv1alpha1.AnnotationWork]})
		return ms, existing.GetGeneration()
	case how != absent && strategy.kind == workv1alpha1.UpdateCreateOnly:
		// Created once; the member's version stays, whatever the manifest says now.
		return observed(m, ms, existing, config, "exists and is not updated (updateStrategy CreateOnly)", statusLimit)
	}
	// Fields the member keeps are left out, so that server-side apply leaves them to their owner there (a plain
	// update carries the member's values instead). A new object starts from the template's values.
	if how != absent {
		retained, err := m.retained(ctx, obj)
		if err != nil {
			return fail(ReasonApplyFailed, err)
		}
		kept := leaveOut(obj, existing, retained)
		if strategy.kind == workv1alpha1.UpdateUpdate {
			keepMemberValues(obj, existing, kept)
		} else if err := handOver(ctx, ri, existing, kept); err != nil {
			return fail(ReasonApplyFailed, err)
		}
	}
	// Once adopted, always adopted: the mark is applied again each time, or server-side apply would drop it.
	id := objectID{group: gvk.Group, kind: gvk.Kind, name: obj.GetName()}
	if namespaced {
		id.namespace = obj.GetNamespace()
	}
	mark(obj, e.HubID, w, id, how == adopted || (how == owned && existing.GetAnnotations()[workv1alpha1.AnnotationAdopted] == "true"))
	write := func() (*unstructured.Unstructured, error) {
		if strategy.kind == workv1alpha1.UpdateUpdate && how != absent {
			// A plain update replaces the object, but not what keeps it alive in the member.
			obj.SetResourceVersion(existing.GetResourceVersion())
			obj.SetFinalizers(existing.GetFinalizers())
			obj.SetOwnerReferences(existing.GetOwnerReferences())
			return ri.Update(ctx, obj, metav1.UpdateOptions{FieldManager: strategy.fieldManager})
		}
		return ri.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: strategy.fieldManager, Force: strategy.force})
	}
	out, err := write()
	if apierrors.IsNotFound(err) && namespaced {
		// The namespace was deleted in the member since it was last seen: create it again and retry once.
		m.forgetNamespace(obj.GetNamespace())
		if err = m.ensureNamespace(ctx, obj.GetNamespace()); err == nil {
			out, err = write()
		}
	}
	if apierrors.IsConflict(err) && strategy.kind == workv1alpha1.UpdateServerSideApply && !strategy.force {
		return fail(ReasonApplyConflict, err)
	}
	if err != nil {
		return fail(ReasonApplyFailed, err)
	}
	if gvk.GroupKind() == namespaceKind {
		m.knowNamespace(obj.GetName())
	}
	m.follow(mapping, out)
	return observed(m, ms, out, config, "applied", statusLimit)
}

// observed reports a manifest's object as it is in the member (applied, with message) with its status,
// health and feedback.
func observed(m *Member, ms workv1alpha1.ManifestStatus, out *unstructured.Unstructured, config *workv1alpha1.ManifestConfig,
	message string, statusLimit int) (workv1alpha1.ManifestStatus, int64) {
	ms.Applied = true
	meta.SetStatusCondition(&ms.Conditions, metav1.Condition{Type: workv1alpha1.WorkConditionApplied, Status: metav1.ConditionTrue, Reason: ReasonApplied, Message: message})
	m.observe(&ms, out, statusLimit)
	feedback(&ms, out, config)
	return ms, out.GetGeneration()
}

// readOnly reports a manifest whose updateStrategy is ReadOnly: the object is read, never written, and a
// missing one is not applied.
func readOnly(ctx context.Context, m *Member, ri dynamic.ResourceInterface, obj *unstructured.Unstructured,
	ms workv1alpha1.ManifestStatus, config *workv1alpha1.ManifestConfig, statusLimit int) (workv1alpha1.ManifestStatus, int64) {
	existing, err := ri.Get(ctx, obj.GetName(), metav1.GetOptions{})
	if err != nil {
		reason := ReasonApplyFailed
		if apierrors.IsNotFound(err) {
			reason, err = ReasonNotFound, fmt.Errorf("%s %s is not in the member, and updateStrategy ReadOnly does not create it", obj.GetKind(), client.ObjectKeyFromObject(obj))
		}
		ms.Feedback = nil
		meta.SetStatusCondition(&ms.Conditions, metav1.Condition{Type: workv1alpha1.WorkConditionApplied, Status: metav1.ConditionFalse, Reason: reason, Message: err.Error()})
		return ms, 0
	}
	// Not followed: the watch on applied objects sees only objects Flotilla marked.
	return observed(m, ms, existing, config, "read only (updateStrategy ReadOnly): never written", statusLimit)
}

// applyStrategy is how a manifest is written: its updateStrategy with the defaults filled in.
type applyStrategy struct {
	kind         workv1alpha1.UpdateStrategyType
	force        bool
	fieldManager string
}

// strategyOf is the strategy of a manifest config: forced server-side apply as "flotilla" unless it says
// otherwise.
func strategyOf(config *workv1alpha1.ManifestConfig) applyStrategy {
	s := applyStrategy{kind: workv1alpha1.UpdateServerSideApply, force: true, fieldManager: workv1alpha1.FieldManager}
	if config == nil || config.UpdateStrategy == nil {
		return s
	}
	s.kind = config.UpdateStrategy.Type
	if ssa := config.UpdateStrategy.ServerSideApply; ssa != nil && s.kind == workv1alpha1.UpdateServerSideApply {
		s.force = ptr.Deref(ssa.Force, true)
		if ssa.FieldManager != "" {
			s.fieldManager = ssa.FieldManager
		}
	}
	return s
}
