package controlplane

import (
	"context"
	"io"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/statepreservation"
)

// policyAdmissionName is the admission plugin that checks what neither the CRD schema nor a CEL rule can:
// that a propagation policy's statePreservation jsonPaths parse as JSONPath. It runs inside the hub's API
// server, so a rule that could never apply is refused when the policy is written, not found out when a
// cluster fails.
const policyAdmissionName = "FlotillaPropagationPolicy"

// registerPolicyAdmission registers the plugin with the API server's options and enables it.
func registerPolicyAdmission(plugins *admission.Plugins) {
	plugins.Register(policyAdmissionName, func(io.Reader) (admission.Interface, error) {
		return policyAdmission{Handler: admission.NewHandler(admission.Create, admission.Update)}, nil
	})
}

type policyAdmission struct{ *admission.Handler }

var _ admission.ValidationInterface = policyAdmission{}

// Validate refuses a PropagationPolicy or ClusterPropagationPolicy whose statePreservation rules do not
// parse, naming the field.
func (policyAdmission) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	r := a.GetResource()
	if r.Group != policyv1alpha1.GroupVersion.Group || a.GetSubresource() != "" ||
		(r.Resource != "propagationpolicies" && r.Resource != "clusterpropagationpolicies") {
		return nil
	}
	u, ok := a.GetObject().(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	raw, found, err := unstructured.NestedMap(u.Object, "spec", "failover")
	if err != nil || !found {
		return nil // the schema already refused what is not an object
	}
	failover := &policyv1alpha1.FailoverBehavior{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, failover); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	path := field.NewPath("spec", "failover")
	var errs field.ErrorList
	if failover.Application != nil {
		errs = append(errs, statepreservation.Validate(failover.Application.StatePreservation, path.Child("application", "statePreservation"))...)
	}
	if failover.Cluster != nil {
		errs = append(errs, statepreservation.Validate(failover.Cluster.StatePreservation, path.Child("cluster", "statePreservation"))...)
	}
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(a.GetKind().GroupKind(), a.GetName(), errs)
}
