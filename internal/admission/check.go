package admission

import (
	"context"
	"io"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apiserveradmission "k8s.io/apiserver/pkg/admission"

	"github.com/flotilla-io/flotilla/internal/controlplane"
)

// Check is an admission rule written in Go, for what neither the CRD schema nor CEL can check. It runs on
// the creation and update of its resources (not their subresources): inside the embedded hub's API server as
// an admission plugin (Plugin), and as a webhook the hub serves over an existing cluster (Webhook).
type Check struct {
	// Name names the admission plugin; the webhook is called by its lower-case form with .flotilla.io.
	Name string
	// Resources are what it checks.
	Resources []schema.GroupResource
	// Validate returns what is wrong with obj, by field, or an error when obj cannot be read as its kind.
	Validate func(obj *unstructured.Unstructured) (field.ErrorList, error)
}

// Checks are the hub's checks in Go.
var Checks = []Check{propagationPolicyCheck, customizationCheck, clusterSetCheck}

// handles reports whether the check applies to an operation on a resource and subresource.
func (c Check) handles(r schema.GroupResource, subresource string) bool {
	return subresource == "" && slices.Contains(c.Resources, r)
}

// review is the one path of both the plugin and the webhook: nil when obj passes, else the API error that
// refuses it, Invalid and naming each field (of kind and name, as the request gives them).
func (c Check) review(kind schema.GroupKind, name string, obj *unstructured.Unstructured) error {
	errs, err := c.Validate(obj)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(kind, name, errs)
}

// webhookName is the check's name as a webhook, which the API server puts in front of its refusals.
func (c Check) webhookName() string { return strings.ToLower(c.Name) + ".flotilla.io" }

// Plugin is the check as an admission plugin of the embedded hub's kube-apiserver.
func (c Check) Plugin() controlplane.AdmissionPlugin {
	return controlplane.AdmissionPlugin{Name: c.Name, New: func(io.Reader) (apiserveradmission.Interface, error) {
		return plugin{Handler: apiserveradmission.NewHandler(apiserveradmission.Create, apiserveradmission.Update), check: c}, nil
	}}
}

// Plugins are what the embedded hub's kube-apiserver runs besides its defaults: the limit on events and
// every check.
func Plugins() []controlplane.AdmissionPlugin {
	plugins := []controlplane.AdmissionPlugin{EventRateLimit()}
	for _, c := range Checks {
		plugins = append(plugins, c.Plugin())
	}
	return plugins
}

type plugin struct {
	*apiserveradmission.Handler
	check Check
}

var _ apiserveradmission.ValidationInterface = plugin{}

// Validate runs the check on an object of its resources.
func (p plugin) Validate(_ context.Context, a apiserveradmission.Attributes, _ apiserveradmission.ObjectInterfaces) error {
	if !p.check.handles(a.GetResource().GroupResource(), a.GetSubresource()) {
		return nil
	}
	u, ok := a.GetObject().(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	return p.check.review(a.GetKind().GroupKind(), a.GetName(), u)
}
