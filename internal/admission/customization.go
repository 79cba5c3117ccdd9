package admission

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// customizationCheck compiles an InterpreterCustomization's expressions and loads its scripts. Neither the
// CRD schema nor a CEL validation rule can compile CEL held in a field: an expression that does not compile,
// or returns the wrong kind of value, is refused with the compiler's message and position when it is
// written, not found out when a binding fails.
var customizationCheck = Check{
	Name: "FlotillaInterpreterCustomization",
	Resources: []schema.GroupResource{{Group: configv1alpha1.GroupVersion.Group, Resource: "interpretercustomizations"},
		{Group: configv1alpha1.KarmadaGroup, Resource: "resourceinterpretercustomizations"}},
	Validate: validateCustomization,
}

// validateCustomization returns the expressions and scripts of an InterpreterCustomization that do not
// compile, naming each field.
func validateCustomization(u *unstructured.Unstructured) (field.ErrorList, error) {
	ic := &configv1alpha1.InterpreterCustomization{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, ic); err != nil {
		return nil, err
	}
	_, errs := interpreter.Compile(ic)
	return errs, nil
}
