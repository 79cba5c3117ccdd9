package admission

import (
	"crypto/x509"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// interpreterWebhookCheck refuses a webhook configuration the hub could not call, or that matches nothing it
// means to: a webhook with neither a url nor a service, a url that is not https (the hub sends objects only
// over TLS), a caBundle without a certificate, rules naming an unknown operation or with "*" beside other
// values, and a configuration whose interpreterContextVersions leave out v1alpha1 (the only version the hub
// speaks). The timeout's range (1 to 30 seconds) and failurePolicy's values are the CRD schema's.
var interpreterWebhookCheck = Check{
	Name: "FlotillaInterpreterWebhook",
	Resources: []schema.GroupResource{{Group: configv1alpha1.GroupVersion.Group, Resource: "interpreterwebhookconfigurations"},
		{Group: configv1alpha1.KarmadaGroup, Resource: "resourceinterpreterwebhookconfigurations"}},
	Validate: validateInterpreterWebhooks,
}

func validateInterpreterWebhooks(u *unstructured.Unstructured) (field.ErrorList, error) {
	cfg := &configv1alpha1.InterpreterWebhookConfiguration{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, cfg); err != nil {
		return nil, err
	}
	var errs field.ErrorList
	for i := range cfg.Webhooks {
		errs = append(errs, validateInterpreterWebhook(&cfg.Webhooks[i], field.NewPath("webhooks").Index(i))...)
	}
	return errs, nil
}

func validateInterpreterWebhook(hook *configv1alpha1.InterpreterWebhook, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	client := path.Child("clientConfig")
	switch s := hook.ClientConfig.Service; {
	case s == nil && hook.ClientConfig.URL == nil:
		errs = append(errs, field.Required(client, "a url or a service"))
	case s != nil:
		if s.Name == "" {
			errs = append(errs, field.Required(client.Child("service", "name"), ""))
		}
		if s.Namespace == "" {
			errs = append(errs, field.Required(client.Child("service", "namespace"), ""))
		}
		if s.Port != nil && (*s.Port < 1 || *s.Port > 65535) {
			errs = append(errs, field.Invalid(client.Child("service", "port"), *s.Port, "must be between 1 and 65535"))
		}
	default:
		if _, err := interpreter.WebhookURL(hook); err != nil {
			errs = append(errs, field.Invalid(client.Child("url"), *hook.ClientConfig.URL, err.Error()))
		}
	}
	if ca := hook.ClientConfig.CABundle; len(ca) > 0 && !x509.NewCertPool().AppendCertsFromPEM(ca) {
		errs = append(errs, field.Invalid(client.Child("caBundle"), "", "holds no PEM certificate"))
	}
	known := interpreter.WebhookOperations()
	for i, r := range hook.Rules {
		rule := path.Child("rules").Index(i)
		ops := make([]string, len(r.Operations))
		for j, op := range r.Operations {
			ops[j] = string(op)
			if op != configv1alpha1.InterpreterOperationAll && !slices.Contains(known, op) {
				errs = append(errs, field.NotSupported(rule.Child("operations").Index(j), op, append([]configv1alpha1.InterpreterOperation{"*"}, known...)))
			}
		}
		for _, f := range []struct {
			name string
			list []string
		}{{"operations", ops}, {"apiGroups", r.APIGroups}, {"apiVersions", r.APIVersions}, {"kinds", r.Kinds}} {
			name, list := f.name, f.list
			if len(list) == 0 {
				errs = append(errs, field.Required(rule.Child(name), `list the values, or "*" for all`))
			}
			if len(list) > 1 && slices.Contains(list, "*") {
				errs = append(errs, field.Invalid(rule.Child(name), strings.Join(list, ","), `"*" stands alone in its list`))
			}
		}
	}
	if !slices.Contains(hook.InterpreterContextVersions, "v1alpha1") {
		errs = append(errs, field.NotSupported(path.Child("interpreterContextVersions"), hook.InterpreterContextVersions, []string{"v1alpha1"}))
	}
	return errs
}
