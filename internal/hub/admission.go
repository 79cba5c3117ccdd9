package hub

import (
	"context"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

// overrideValuesPolicy is the name of the admission policy (and its binding) that checks override values.
const overrideValuesPolicy = "flotilla-override-values"

// valueRequired is a CEL check that every operation in ops (a list of {operator, value}) that adds or
// replaces has a value.
func valueRequired(ops string) string {
	return fmt.Sprintf("%s.all(o, o.operator == 'remove' || has(o.value))", ops)
}

// overrideValuesAdmission rejects override operations that could never apply: add or replace without a value.
// The CRD's own rules cannot see `value` (schemaless JSON); an admission policy evaluates the object as it
// is.
func overrideValuesAdmission() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	eachRule := func(check string) string {
		return "!has(object.spec.overrideRules) || object.spec.overrideRules.all(r, !has(r.overriders) || " + check + ")"
	}
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: overrideValuesPolicy},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{policyv1alpha1.GroupVersion.Group}, APIVersions: []string{"*"},
						Resources: []string{"overridepolicies", "clusteroverridepolicies"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{
				{
					Expression: eachRule("!has(r.overriders.plaintext) || " + valueRequired("r.overriders.plaintext")),
					Message:    "spec.overrideRules[].overriders.plaintext[].value: Required value: value is required for add and replace",
				},
				{
					Expression: eachRule("!has(r.overriders.fieldOverrider) || r.overriders.fieldOverrider.all(f, " +
						"(!has(f.json) || " + valueRequired("f.json") + ") && (!has(f.yaml) || " + valueRequired("f.yaml") + "))"),
					Message: "spec.overrideRules[].overriders.fieldOverrider[].json[]/yaml[].value: Required value: value is required for add and replace",
				},
			},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: overrideValuesPolicy},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: overrideValuesPolicy,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}
	return policy, binding
}

// InstallAdmission installs (or restores) the hub's admission policies. The API server enforces them a
// second or two later (it reloads policies once a second); WaitForAdmission waits for that.
func InstallAdmission(ctx context.Context, cfg *rest.Config) error {
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return err
	}
	policy, binding := overrideValuesAdmission()
	wantPolicy, wantBinding := policy.Spec, binding.Spec
	if _, err := controllerutil.CreateOrUpdate(ctx, c, policy, func() error { policy.Spec = wantPolicy; return nil }); err != nil {
		return fmt.Errorf("admission policy %s: %w", policy.Name, err)
	}
	if _, err := controllerutil.CreateOrUpdate(ctx, c, binding, func() error { binding.Spec = wantBinding; return nil }); err != nil {
		return fmt.Errorf("admission policy binding %s: %w", binding.Name, err)
	}
	return nil
}

// WaitForAdmission waits until the API server enforces the admission policies: a dry run of an override
// without a value is rejected. Flotilla's CRDs must be established.
func WaitForAdmission(ctx context.Context, cfg *rest.Config) error {
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return err
	}
	probe := &policyv1alpha1.ClusterOverridePolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "flotilla-admission-probe"},
		Spec: policyv1alpha1.OverrideSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap"}},
			OverrideRules: []policyv1alpha1.RuleWithCluster{{Overriders: policyv1alpha1.Overriders{
				Plaintext: []policyv1alpha1.PlaintextOverrider{{Path: "/data/x", Operator: policyv1alpha1.OverriderOpAdd}},
			}}},
		},
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := c.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		return apierrors.IsInvalid(err) || apierrors.IsForbidden(err), nil
	})
	if err != nil {
		return fmt.Errorf("admission policy %s is not enforced: %w", overrideValuesPolicy, err)
	}
	return nil
}
