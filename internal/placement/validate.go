package placement

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// ValidateSpec returns what is wrong with a Placement's spec, by field (a CEL expression that does not
// compile among them): admission refuses it, so the
// controller's own checks (Decide's errors) only meet Placements written before a rule existed.
func ValidateSpec(spec *clusterv1alpha1.PlacementSpec) field.ErrorList {
	var errs field.ErrorList
	root := field.NewPath("spec")
	if n := spec.NumberOfClusters; n != nil && *n < 0 {
		errs = append(errs, field.Invalid(root.Child("numberOfClusters"), *n, "must be 0 or more"))
	}
	opts := validation.LabelSelectorValidationOptions{}
	for i := range spec.Predicates {
		path := root.Child("predicates").Index(i).Child("requiredClusterSelector", "labelSelector")
		errs = append(errs, validation.ValidateLabelSelector(&spec.Predicates[i].RequiredClusterSelector.LabelSelector, opts, path)...)
		expressions := root.Child("predicates").Index(i).Child("requiredClusterSelector", "celSelector", "celExpressions")
		for j, source := range spec.Predicates[i].RequiredClusterSelector.CelSelector.CelExpressions {
			if _, err := compileExpression(source, ""); err != nil {
				errs = append(errs, field.Invalid(expressions.Index(j), source, err.Error()))
			}
		}
	}
	for i, t := range spec.Tolerations {
		if t.TolerationSeconds != nil && *t.TolerationSeconds < 0 {
			errs = append(errs, field.Invalid(root.Child("tolerations").Index(i).Child("tolerationSeconds"), *t.TolerationSeconds, "must be 0 or more"))
		}
	}
	if _, err := Weights(spec.PrioritizerPolicy); err != nil {
		errs = append(errs, field.Invalid(root.Child("prioritizerPolicy", "configurations"), nil, err.Error()))
	}
	groups := root.Child("decisionStrategy", "groupStrategy")
	seen := map[string]bool{}
	for i, g := range spec.DecisionStrategy.GroupStrategy.DecisionGroups {
		path := groups.Child("decisionGroups").Index(i)
		if seen[g.GroupName] {
			errs = append(errs, field.Duplicate(path.Child("groupName"), g.GroupName))
		}
		seen[g.GroupName] = true
		errs = append(errs, validation.ValidateLabelSelector(&g.GroupClusterSelector.LabelSelector, opts, path.Child("groupClusterSelector", "labelSelector"))...)
	}
	if v := spec.DecisionStrategy.GroupStrategy.ClustersPerDecisionGroup; v != nil {
		if _, err := GroupSize(v, 1); err != nil {
			errs = append(errs, field.Invalid(groups.Child("clustersPerDecisionGroup"), v.String(), err.Error()))
		}
	}
	return errs
}
