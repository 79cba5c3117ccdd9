package admission

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apiserveradmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/internal/controlplane"
)

// Check is an admission rule written in Go, for what neither the CRD schema nor CEL can check. It runs on
// the creation and update of its resources (and of the subresources it names): inside the embedded hub's API
// server as an admission plugin (Plugin), and as a webhook the hub serves over an existing cluster (Webhook).
type Check struct {
	// Name names the admission plugin; the webhook is called by its lower-case form with .flotilla.io.
	Name string
	// Resources are what it checks.
	Resources []schema.GroupResource
	// Subresources of Resources it checks too (a workload's scale); none: only the objects themselves.
	Subresources []string
	// Validate returns what is wrong with obj, by field, or an error when obj cannot be read as its kind.
	// Nil: the check only warns (and its webhook lets objects through when the hub does not answer).
	Validate func(obj *unstructured.Unstructured) (field.ErrorList, error)
	// Warn, when set, returns warnings about an object Validate accepts, reading other objects from the hub
	// through r. It never refuses: what it cannot read draws no warning.
	Warn func(ctx context.Context, r client.Reader, obj *unstructured.Unstructured) []string
	// Admit, when set, reviews a whole request against the hub's state, read through r: nil admits, an API
	// error refuses, any other error refuses as an internal error (a read that failed never admits). It sees
	// the old object and the subresource, which Validate does not.
	Admit func(ctx context.Context, r client.Reader, req Request) error

	// reader is what Warn and Admit read: the loopback client of the embedded API server, or the webhook's
	// client.
	reader client.Reader
}

// Request is what a check's Admit sees of a create or update.
type Request struct {
	Resource    schema.GroupVersionResource
	Subresource string
	Kind        schema.GroupVersionKind
	Namespace   string
	Name        string
	// Object is the object written (for a subresource, the subresource's object, such as a Scale); OldObject
	// is what it replaces, nil on create.
	Object, OldObject *unstructured.Unstructured
}

// admitRequest runs the check's Admit, refusing when the check has no reader.
func (c Check) admitRequest(ctx context.Context, req Request) error {
	if c.reader == nil {
		return apierrors.NewInternalError(fmt.Errorf("admission check %s cannot read the hub", c.Name))
	}
	err := c.Admit(ctx, c.reader, req)
	var status apierrors.APIStatus
	if err != nil && !errors.As(err, &status) {
		return apierrors.NewInternalError(err)
	}
	return err
}

// warnings runs Warn, when the check has one and a reader.
func (c Check) warnings(ctx context.Context, obj *unstructured.Unstructured) []string {
	if c.Warn == nil || c.reader == nil {
		return nil
	}
	return c.Warn(ctx, c.reader, obj)
}

// Checks are the hub's checks in Go. clusterSetGrantCheck, which only warns, comes first: the tests of
// refusals take the last check of a resource.
var Checks = []Check{clusterSetGrantCheck, propagationPolicyCheck, customizationCheck, interpreterWebhookCheck, clusterSetCheck, quotaSpecCheck, quotaCheck, placementCheck, autoscalingCheck, clusterCheck, addOnCheck, addOnConfigCheck, clusterAddOnCheck}

// handles reports whether the check applies to an operation on a resource and subresource.
func (c Check) handles(r schema.GroupResource, subresource string) bool {
	return (subresource == "" || slices.Contains(c.Subresources, subresource)) && slices.Contains(c.Resources, r)
}

// review is the one path of both the plugin and the webhook: nil when obj passes, else the API error that
// refuses it, Invalid and naming each field (of kind and name, as the request gives them).
func (c Check) review(kind schema.GroupKind, name string, obj *unstructured.Unstructured) error {
	if c.Validate == nil {
		return nil
	}
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
		return &plugin{Handler: apiserveradmission.NewHandler(apiserveradmission.Create, apiserveradmission.Update), check: c}, nil
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

var (
	_ apiserveradmission.ValidationInterface = &plugin{}
	_ initializer.WantsDynamicClient         = &plugin{}
)

// SetDynamicClient gives the check the API server's loopback client, for its warnings and its Admit.
func (p *plugin) SetDynamicClient(d dynamic.Interface) {
	if p.check.Warn != nil || p.check.Admit != nil {
		p.check.reader = dynamicReader{d}
	}
}

// ValidateInitialization accepts a plugin without a client when its check only warns: it then warns about
// nothing. A check that admits by the hub's state needs the client.
func (p *plugin) ValidateInitialization() error {
	if p.check.Admit != nil && p.check.reader == nil {
		return fmt.Errorf("admission plugin %s needs the API server's client", p.check.Name)
	}
	return nil
}

// Validate runs the check on an object of its resources, and adds its warnings to the answer.
func (p *plugin) Validate(ctx context.Context, a apiserveradmission.Attributes, o apiserveradmission.ObjectInterfaces) error {
	if !p.check.handles(a.GetResource().GroupResource(), a.GetSubresource()) {
		return nil
	}
	if p.check.Admit != nil {
		// Built-in kinds arrive as the API server's internal types: read them in the version the request names.
		req := Request{Resource: a.GetResource(), Subresource: a.GetSubresource(), Kind: a.GetKind(), Namespace: a.GetNamespace(), Name: a.GetName()}
		var err error
		if req.Object, err = versioned(a.GetObject(), a.GetKind(), o); err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
		if req.OldObject, err = versioned(a.GetOldObject(), a.GetKind(), o); err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
		return p.check.admitRequest(ctx, req)
	}
	u, ok := a.GetObject().(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	if err := p.check.review(a.GetKind().GroupKind(), a.GetName(), u); err != nil {
		return err
	}
	for _, w := range p.check.warnings(ctx, u) {
		warning.AddWarning(ctx, "", w)
	}
	return nil
}

// versioned returns obj, of any type the API server holds, as gvk; nil for nil.
func versioned(obj runtime.Object, gvk schema.GroupVersionKind, o apiserveradmission.ObjectInterfaces) (*unstructured.Unstructured, error) {
	if obj == nil || reflect.ValueOf(obj).IsNil() {
		return nil, nil
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u, nil
	}
	out, err := o.GetObjectConvertor().ConvertToVersion(obj, gvk.GroupVersion())
	if err != nil {
		return nil, err
	}
	fields, err := runtime.DefaultUnstructuredConverter.ToUnstructured(out)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: fields}
	u.SetGroupVersionKind(gvk)
	return u, nil
}
