package admission

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// clusterCheck checks what the CRD schema cannot of a Cluster: that its resource models are grades a member
// can sort its nodes into.
var clusterCheck = Check{
	Name:      "FlotillaCluster",
	Resources: []schema.GroupResource{{Group: clusterv1alpha1.GroupVersion.Group, Resource: "clusters"}},
	Validate:  validateCluster,
}

// validateCluster returns what is wrong with a Cluster's spec.resourceModels: the grades are numbered 0, 1,
// 2, ... in order; each names the same resources in the same order, each once; a range's min is below its
// max and not negative; and each resource's ranges adjoin from 0 (the first grade's min is 0, each next
// grade's min is the previous grade's max).
func validateCluster(u *unstructured.Unstructured) (field.ErrorList, error) {
	raw, found, err := unstructured.NestedMap(u.Object, "spec")
	if err != nil || !found {
		return nil, nil // the schema already refused what is not an object
	}
	spec := &clusterv1alpha1.ClusterSpec{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, spec); err != nil {
		return nil, err
	}
	models := spec.ResourceModels
	path := field.NewPath("spec", "resourceModels")
	var errs field.ErrorList
	for i, m := range models {
		grade := path.Index(i)
		if m.Grade != int32(i) {
			errs = append(errs, field.Invalid(grade.Child("grade"), m.Grade, fmt.Sprintf("grades are numbered 0, 1, 2, ... in order: want %d", i)))
		}
		seen := map[string]bool{}
		for j, r := range m.Ranges {
			rp := grade.Child("ranges").Index(j)
			switch {
			case r.Name == "":
				errs = append(errs, field.Required(rp.Child("name"), "names the resource, for example cpu"))
			case seen[string(r.Name)]:
				errs = append(errs, field.Duplicate(rp.Child("name"), r.Name))
			}
			seen[string(r.Name)] = true
			if r.Min.Sign() < 0 {
				errs = append(errs, field.Invalid(rp.Child("min"), r.Min.String(), "must not be negative"))
			}
			if r.Min.Cmp(r.Max) >= 0 {
				errs = append(errs, field.Invalid(rp.Child("max"), r.Max.String(), "must be more than min ("+r.Min.String()+")"))
			}
			if i == 0 {
				if !r.Min.IsZero() {
					errs = append(errs, field.Invalid(rp.Child("min"), r.Min.String(), "the first grade starts at 0"))
				}
				continue
			}
			prev := models[i-1].Ranges
			switch {
			case j >= len(prev) || prev[j].Name != r.Name:
				errs = append(errs, field.Invalid(rp.Child("name"), r.Name, "every grade names the same resources in the same order as grade 0"))
			case prev[j].Max.Cmp(r.Min) != 0:
				errs = append(errs, field.Invalid(rp.Child("min"), r.Min.String(), "must be the previous grade's max ("+prev[j].Max.String()+"): the ranges adjoin"))
			}
		}
		if i > 0 && len(m.Ranges) != len(models[i-1].Ranges) {
			errs = append(errs, field.Invalid(grade.Child("ranges"), len(m.Ranges), fmt.Sprintf("every grade names the same %d resources", len(models[0].Ranges))))
		}
	}
	return errs, nil
}
