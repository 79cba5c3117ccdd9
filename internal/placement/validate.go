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
	errs = append(errs, ValidateGroupStrategy(spec.DecisionStrategy.GroupStrategy, root.Child("decisionStrategy", "groupStrategy"))...)
	return errs
}

// ValidateGroupStrategy returns what is wrong with decision groups under path: a duplicate group name, a
// selector that does not parse, a clustersPerDecisionGroup that is neither a count nor a percentage. A
// Placement's decisionStrategy and a policy's rollout both group clusters this way.
func ValidateGroupStrategy(gs clusterv1alpha1.GroupStrategy, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, g := range gs.DecisionGroups {
		at := path.Child("decisionGroups").Index(i)
		if seen[g.GroupName] {
			errs = append(errs, field.Duplicate(at.Child("groupName"), g.GroupName))
		}
		seen[g.GroupName] = true
		errs = append(errs, validation.ValidateLabelSelector(&g.GroupClusterSelector.LabelSelector,
			validation.LabelSelectorValidationOptions{}, at.Child("groupClusterSelector", "labelSelector"))...)
	}
	if v := gs.ClustersPerDecisionGroup; v != nil {
		if _, err := groupSize(v, 1); err != nil {
			errs = append(errs, field.Invalid(path.Child("clustersPerDecisionGroup"), v.String(), err.Error()))
		}
	}
	return errs
}
