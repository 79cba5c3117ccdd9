package controlplane

import (
	"context"
	"io"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// customizationAdmissionName is the admission plugin that compiles an InterpreterCustomization's
// expressions. Neither the CRD schema nor a CEL validation rule can compile CEL held in a field, so it runs
// inside the hub's API server: an expression that does not compile, or returns the wrong kind of value, is
// refused with the compiler's message and position when it is written, not found out when a binding fails.
const customizationAdmissionName = "FlotillaInterpreterCustomization"

// registerCustomizationAdmission registers the plugin with the API server's options.
func registerCustomizationAdmission(plugins *admission.Plugins) {
	plugins.Register(customizationAdmissionName, func(io.Reader) (admission.Interface, error) {
		return customizationAdmission{Handler: admission.NewHandler(admission.Create, admission.Update)}, nil
	})
}

type customizationAdmission struct{ *admission.Handler }

var _ admission.ValidationInterface = customizationAdmission{}

// Validate refuses an InterpreterCustomization whose expressions do not compile, naming each field.
func (customizationAdmission) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	r := a.GetResource()
	if r.Group != configv1alpha1.GroupVersion.Group || r.Resource != "interpretercustomizations" || a.GetSubresource() != "" {
		return nil
	}
	u, ok := a.GetObject().(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	ic := &configv1alpha1.InterpreterCustomization{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, ic); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	if _, errs := interpreter.Compile(ic); len(errs) > 0 {
		return apierrors.NewInvalid(a.GetKind().GroupKind(), a.GetName(), errs)
	}
	return nil
}
