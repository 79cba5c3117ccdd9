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
// is written, not found out when a cluster fails; that a placementRef stands alone, in a namespaced policy;
// and that its rollout strategy is one a rollout can follow (validateRollout).
var propagationPolicyCheck = Check{
	Name: "FlotillaPropagationPolicy",
	Resources: []schema.GroupResource{
		{Group: policyv1alpha1.GroupVersion.Group, Resource: "propagationpolicies"},
		{Group: policyv1alpha1.GroupVersion.Group, Resource: "clusterpropagationpolicies"},
		{Group: policyv1alpha1.KarmadaGroup, Resource: "propagationpolicies"},
		{Group: policyv1alpha1.KarmadaGroup, Resource: "clusterpropagationpolicies"},
	},
	Validate: validatePropagationPolicy,
}

// validatePropagationPolicy returns what is wrong with a PropagationPolicy or ClusterPropagationPolicy,
// naming the field: statePreservation rules that do not parse, a placementRef that cannot be followed, and a
// rollout strategy a rollout cannot follow. It reads only the fields it checks: the rest may still be refused
// by the schema.
func validatePropagationPolicy(u *unstructured.Unstructured) (field.ErrorList, error) {
	path := field.NewPath("spec")
	errs := validatePlacementRef(u, path)
	if raw, found, err := unstructured.NestedMap(u.Object, "spec", "rollout"); err == nil && found {
		r := &policyv1alpha1.RolloutStrategy{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, r); err != nil {
			return nil, err
		}
		_, placementRef, _ := unstructured.NestedMap(u.Object, "spec", "placementRef")
		errs = append(errs, validateRollout(r, placementRef, path.Child("rollout"))...)
	}
	raw, found, err := unstructured.NestedMap(u.Object, "spec", "failover")
	if err != nil || !found {
		return errs, nil // the schema already refused what is not an object
	}
	failover := &policyv1alpha1.FailoverBehavior{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, failover); err != nil {
		return nil, err
	}
	if failover.Application != nil {
		errs = append(errs, statepreservation.Validate(failover.Application.StatePreservation, path.Child("failover", "application", "statePreservation"))...)
	}
	if failover.Cluster != nil {
		errs = append(errs, statepreservation.Validate(failover.Cluster.StatePreservation, path.Child("failover", "cluster", "statePreservation"))...)
	}
	return errs, nil
}

// validatePlacementRef refuses a placementRef without a name, one next to a placement that says anything
// (the Placement decides the clusters; the placement would be ignored), and one in a
// ClusterPropagationPolicy (Placements are namespaced, and a cluster-wide policy places templates of every
// namespace).
func validatePlacementRef(u *unstructured.Unstructured, path *field.Path) field.ErrorList {
	ref, found, err := unstructured.NestedMap(u.Object, "spec", "placementRef")
	if err != nil || !found || ref == nil {
		return nil // the schema refuses what is not an object
	}
	var errs field.ErrorList
	if u.GetKind() == "ClusterPropagationPolicy" {
		errs = append(errs, field.Forbidden(path.Child("placementRef"), "a ClusterPropagationPolicy cannot follow a Placement: Placements are namespaced; use placement"))
	}
	if name, _ := ref["name"].(string); name == "" {
		errs = append(errs, field.Required(path.Child("placementRef", "name"), "the name of a Placement in the policy's namespace"))
	}
	if placement, _, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "placement"); !empty(placement) {
		errs = append(errs, field.Forbidden(path.Child("placement"), "placement and placementRef are mutually exclusive: with placementRef the Placement decides the clusters"))
	}
	return errs
}

// empty says whether a JSON value says nothing: absent, null, or an object or list of empty values (a Go
// client sends the zero placement as {}).
func empty(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case map[string]any:
		for _, e := range v {
			if !empty(e) {
				return false
			}
		}
		return true
	case []any:
		return len(v) == 0
	}
	return false
}
