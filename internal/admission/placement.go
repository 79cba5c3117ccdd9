package admission

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	ocmclusterv1beta1 "github.com/flotilla-io/flotilla/api/ocm/cluster/v1beta1"
	"github.com/flotilla-io/flotilla/internal/placement"
)

// placementCheck refuses a Placement its controller could not evaluate: a label selector that does not parse,
// a CEL expression that does not compile or does not return a bool (named by its index), duplicate
// decision-group names, a clustersPerDecisionGroup that is neither a count nor a percentage, an unknown
// built-in score, a negative numberOfClusters or tolerationSeconds. An OCM Placement is checked as the
// Flotilla Placement it is mirrored onto.
var placementCheck = Check{
	Name: "FlotillaPlacement",
	Resources: []schema.GroupResource{{Group: clusterv1alpha1.GroupVersion.Group, Resource: "placements"},
		{Group: ocmclusterv1beta1.GroupVersion.Group, Resource: "placements"}},
	Validate: func(u *unstructured.Unstructured) (field.ErrorList, error) {
		if u.GroupVersionKind().Group == ocmclusterv1beta1.GroupVersion.Group {
			p := &ocmclusterv1beta1.Placement{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
				return nil, err
			}
			spec, err := p.Spec.Flotilla()
			if err != nil {
				return field.ErrorList{field.Invalid(field.NewPath("spec", "tolerations"), p.Spec.Tolerations, err.Error())}, nil
			}
			return placement.ValidateSpec(spec), nil
		}
		p := &clusterv1alpha1.Placement{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
			return nil, err
		}
		return placement.ValidateSpec(&p.Spec), nil
	},
}
