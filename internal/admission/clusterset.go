package admission

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	ocmclusterv1beta2 "github.com/flotilla-io/flotilla/api/ocm/cluster/v1beta2"
)

// clusterSetBindPolicy is the name of the admission policy (and its binding) that lets only who may bind a
// ClusterSet write a ClusterSetBinding naming it.
const clusterSetBindPolicy = "flotilla-clusterset-bind"

// builtinSetsPolicy is the name of the admission policy (and its binding) that keeps the built-in sets'
// selectors.
const builtinSetsPolicy = "flotilla-clusterset-builtins"

// clusterSetBindAdmission refuses the creation or change of a ClusterSetBinding to anyone who may not create
// clustersets/bind on the set it names, as OCM does: RBAC on clustersetbindings says who may write bindings
// in a namespace (a namespace's editors), the bind permission says which sets they may grant it, so a team
// that edits its namespace cannot grant itself the PCI clusters. Unbinding (delete) needs only RBAC. OCM's
// ManagedClusterSetBinding, mirrored onto a ClusterSetBinding by the hub, needs OCM's
// managedclustersets/bind or Flotilla's clustersets/bind.
func clusterSetBindAdmission() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	group, ocm := clusterv1alpha1.GroupVersion.Group, ocmclusterv1beta2.GroupVersion.Group
	may := func(group, resource string) string {
		return fmt.Sprintf("authorizer.group(%q).resource(%q).subresource('bind').name(object.spec.clusterSet).check('create').allowed()", group, resource)
	}
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: clusterSetBindPolicy},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: matching([]string{group, ocm}, []string{"clustersetbindings", "managedclustersetbindings"},
				admissionregistrationv1.Create, admissionregistrationv1.Update),
			Validations: []admissionregistrationv1.Validation{{
				Expression: fmt.Sprintf("%s || (request.resource.group == %q && %s)", may(group, "clustersets"), ocm, may(ocm, "managedclustersets")),
				MessageExpression: fmt.Sprintf("'spec.clusterSet: binding ClusterSet ' + object.spec.clusterSet + ' to a namespace needs create on %s (group %s) for that set' + "+
					"(request.resource.group == %q ? ' or on %s (group %s)' : '') + ' (ask an administrator of the hub)'",
					clusterv1alpha1.ResourceClusterSetsBind, group, ocm, ocmclusterv1beta2.ResourceManagedClusterSetsBind, ocm),
				Reason: ptr.To(metav1.StatusReasonForbidden),
			}},
		},
	}
	return policy, bindingFor(policy)
}

// builtinSetsAdmission refuses a spec for the built-in sets other than the hub's: default picks by the
// exclusive label (and the Clusters without it), global picks every Cluster. Namespaces bound to them rely
// on what the names mean. Deleting them is allowed, as in OCM: the hub recreates them at once
// (clusterset.BuiltinSets), and a delete that RBAC allows is the administrator's to make.
func builtinSetsAdmission() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	const sel = "object.spec.clusterSelector"
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: builtinSetsPolicy},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: matching([]string{clusterv1alpha1.GroupVersion.Group}, []string{"clustersets"}, admissionregistrationv1.Create, admissionregistrationv1.Update),
			MatchConditions: []admissionregistrationv1.MatchCondition{{
				Name: "builtin", Expression: fmt.Sprintf("object.metadata.name in [%q, %q]", clusterv1alpha1.ClusterSetDefault, clusterv1alpha1.ClusterSetGlobal),
			}},
			Validations: []admissionregistrationv1.Validation{
				{
					Expression: fmt.Sprintf("object.metadata.name != %q || !has(%s.selectorType) || %s.selectorType == %q",
						clusterv1alpha1.ClusterSetDefault, sel, sel, clusterv1alpha1.ExclusiveClusterSetLabel),
					Message: fmt.Sprintf("spec.clusterSelector: the built-in ClusterSet %s holds the clusters without the label %s; its selector cannot change",
						clusterv1alpha1.ClusterSetDefault, clusterv1alpha1.LabelClusterSet),
				},
				{
					Expression: fmt.Sprintf("object.metadata.name != %[1]q || (has(%[2]s.selectorType) && %[2]s.selectorType == %[3]q && "+
						"(!has(%[2]s.labelSelector) || ((!has(%[2]s.labelSelector.matchLabels) || size(%[2]s.labelSelector.matchLabels) == 0) && "+
						"(!has(%[2]s.labelSelector.matchExpressions) || size(%[2]s.labelSelector.matchExpressions) == 0))))",
						clusterv1alpha1.ClusterSetGlobal, sel, clusterv1alpha1.LabelSelector),
					Message: fmt.Sprintf("spec.clusterSelector: the built-in ClusterSet %s holds every cluster (an empty labelSelector); its selector cannot change",
						clusterv1alpha1.ClusterSetGlobal),
				},
			},
		},
	}
	return policy, bindingFor(policy)
}

// clusterSetCheck checks what the CRD schema cannot: that a ClusterSet's labelSelector is a label selector
// (operators, keys and values), so a set that could hold no Cluster is refused when written; an OCM
// ManagedClusterSet is checked alike.
var clusterSetCheck = Check{
	Name: "FlotillaClusterSet",
	Resources: []schema.GroupResource{{Group: clusterv1alpha1.GroupVersion.Group, Resource: "clustersets"},
		{Group: ocmclusterv1beta2.GroupVersion.Group, Resource: "managedclustersets"}},
	Validate: validateClusterSet,
}

// validateClusterSet returns what is wrong with a ClusterSet's labelSelector, naming the field.
func validateClusterSet(u *unstructured.Unstructured) (field.ErrorList, error) {
	raw, found, err := unstructured.NestedMap(u.Object, "spec", "clusterSelector", "labelSelector")
	if err != nil || !found {
		return nil, nil // the schema already refused what is not an object
	}
	sel := &metav1.LabelSelector{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, sel); err != nil {
		return nil, err
	}
	path := field.NewPath("spec", "clusterSelector", "labelSelector")
	errs := metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, path)
	if len(errs) == 0 {
		if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
			errs = append(errs, field.Invalid(path, raw, err.Error()))
		}
	}
	return errs, nil
}
