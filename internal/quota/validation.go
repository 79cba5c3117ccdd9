package quota

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// ValidateSpec returns what is wrong with a FederatedResourceQuota's spec: a negative quantity (the CRD's
// CEL rule refuses it too; this says which resource), and a static assignment that gives one cluster more of
// a resource than the whole fleet may use.
func ValidateSpec(spec *policyv1alpha1.FederatedResourceQuotaSpec) field.ErrorList {
	var errs field.ErrorList
	path := field.NewPath("spec")
	errs = append(errs, nonNegative(path.Child("overall"), spec.Overall)...)
	for i, a := range spec.StaticAssignments {
		hard := path.Child("staticAssignments").Index(i).Child("hard")
		errs = append(errs, nonNegative(hard, a.Hard)...)
		for _, name := range sortedNames(a.Hard) {
			limit, capped := spec.Overall[name]
			if q := a.Hard[name]; capped && q.Cmp(limit) > 0 {
				errs = append(errs, field.Invalid(hard.Key(string(name)), q.String(),
					fmt.Sprintf("cluster %s may not have more %s than the overall %s", a.ClusterName, name, limit.String())))
			}
		}
	}
	return errs
}

func nonNegative(path *field.Path, l corev1.ResourceList) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sortedNames(l) {
		if q := l[name]; q.Sign() < 0 {
			errs = append(errs, field.Invalid(path.Key(string(name)), q.String(), "a quota is never negative"))
		}
	}
	return errs
}
