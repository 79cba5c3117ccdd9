package admission

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/statepreservation"
)

// propagationPolicyCheck checks what neither the CRD schema nor a CEL rule can: that a propagation policy's
// statePreservation jsonPaths parse as JSONPath, so a rule that could never apply is refused when the policy
// is written, not found out when a cluster fails.
var propagationPolicyCheck = Check{
	Name: "FlotillaPropagationPolicy",
	Resources: []schema.GroupResource{
		{Group: policyv1alpha1.GroupVersion.Group, Resource: "propagationpolicies"},
		{Group: policyv1alpha1.GroupVersion.Group, Resource: "clusterpropagationpolicies"},
	},
	Validate: validatePropagationPolicy,
}

// validatePropagationPolicy returns the statePreservation rules of a PropagationPolicy or
// ClusterPropagationPolicy that do not parse, naming the field.
func validatePropagationPolicy(u *unstructured.Unstructured) (field.ErrorList, error) {
	raw, found, err := unstructured.NestedMap(u.Object, "spec", "failover")
	if err != nil || !found {
		return nil, nil // the schema already refused what is not an object
	}
	failover := &policyv1alpha1.FailoverBehavior{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, failover); err != nil {
		return nil, err
	}
	path := field.NewPath("spec", "failover")
	var errs field.ErrorList
	if failover.Application != nil {
		errs = append(errs, statepreservation.Validate(failover.Application.StatePreservation, path.Child("application", "statePreservation"))...)
	}
	if failover.Cluster != nil {
		errs = append(errs, statepreservation.Validate(failover.Cluster.StatePreservation, path.Child("cluster", "statePreservation"))...)
	}
	return errs, nil
}
