package admission

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/placement"
	"github.com/flotilla-io/flotilla/internal/rollout"
)

// validateRollout returns what is wrong with a propagation policy's rollout strategy, by field: counts and
// percentages that are neither, durations the rollout could never meet, decision groups that do not parse,
// and mandatory groups that name no group. A policy with a placementRef takes its groups from the Placement,
// which admission does not read, so its mandatory group names are not checked here.
func validateRollout(r *policyv1alpha1.RolloutStrategy, placementRef bool, path *field.Path) field.ErrorList {
	errs := placement.ValidateGroupStrategy(clusterv1alpha1.GroupStrategy{
		DecisionGroups: r.DecisionGroups, ClustersPerDecisionGroup: r.ClustersPerDecisionGroup}, path)
	p := r.Progressive
	if p == nil {
		return errs
	}
	at := path.Child("progressive")
	if r.Type != policyv1alpha1.RolloutProgressive && r.Type != policyv1alpha1.RolloutProgressivePerGroup {
		errs = append(errs, field.Invalid(at, "{...}", fmt.Sprintf("progressive applies to type Progressive or ProgressivePerGroup, not %s", orAll(r.Type))))
	}
	if msg := countOrPercent(p.MaxConcurrency, 1); msg != "" {
		errs = append(errs, field.Invalid(at.Child("maxConcurrency"), p.MaxConcurrency.String(), msg))
	}
	if msg := countOrPercent(p.MaxFailures, 0); msg != "" {
		errs = append(errs, field.Invalid(at.Child("maxFailures"), p.MaxFailures.String(), msg))
	}
	if p.MinSuccessTime.Duration < 0 {
		errs = append(errs, field.Invalid(at.Child("minSuccessTime"), p.MinSuccessTime.Duration.String(), "must not be negative"))
	}
	if d := p.ProgressDeadline; d != nil {
		switch {
		case d.Duration < 0:
			errs = append(errs, field.Invalid(at.Child("progressDeadline"), d.Duration.String(), "must not be negative"))
		case d.Duration < p.MinSuccessTime.Duration:
			errs = append(errs, field.Invalid(at.Child("progressDeadline"), d.Duration.String(),
				fmt.Sprintf("shorter than minSuccessTime %s: no cluster could succeed before it fails", p.MinSuccessTime.Duration)))
		}
	}
	if placementRef {
		return errs
	}
	named := map[string]bool{}
	for _, g := range r.DecisionGroups {
		named[g.GroupName] = true
	}
	for i, m := range p.MandatoryDecisionGroups {
		if m.GroupName != "" && !named[m.GroupName] {
			errs = append(errs, field.NotFound(at.Child("mandatoryDecisionGroups").Index(i).Child("groupName"), m.GroupName))
		}
	}
	return errs
}

// countOrPercent says what is wrong with a count of at least least or a percentage from 0% to 100%, or "".
func countOrPercent(v *intstr.IntOrString, least int32) string {
	if _, err := rollout.Count(v, 100, 0); err != nil {
		return err.Error()
	}
	if v != nil && v.Type == intstr.Int && v.IntVal < least {
		return fmt.Sprintf("want at least %d, or a percentage", least)
	}
	return ""
}

func orAll(t policyv1alpha1.RolloutType) policyv1alpha1.RolloutType {
	if t == "" {
		return policyv1alpha1.RolloutAll
	}
	return t
}
