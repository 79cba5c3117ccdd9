package admission

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
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/registration"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

// overrideValuesPolicy is the name of the admission policy (and its binding) that checks override values
// and paths.
const overrideValuesPolicy = "flotilla-override-values"

// agentWorksPolicy is the name of the admission policy (and its binding) that limits what agents change in
// their Works.
const agentWorksPolicy = "flotilla-agent-works"

// valueRequired is a CEL check that every operation in ops (a list of {operator, value}) that adds or
// replaces has a value.
func valueRequired(ops string) string {
	return fmt.Sprintf("%s.all(o, o.operator == 'remove' || has(o.value))", ops)
}

// reachesIdentity is a CEL check that the JSON pointer path is, contains or lies under apiVersion, kind,
// metadata.name or metadata.namespace: an override there would make the manifest another object (another
// kind, or an object in a namespace its author cannot reach). A pointer has one spelling for each field
// (~0 and ~1 only escape ~ and /), so comparing strings is enough.
func reachesIdentity(path string) string {
	return fmt.Sprintf("(%[1]s in ['/apiVersion', '/kind', '/metadata', '/metadata/name', '/metadata/namespace'] || "+
		"['/apiVersion/', '/kind/', '/metadata/name/', '/metadata/namespace/'].exists(p, %[1]s.startsWith(p)))", path)
}

// identityMessage ends every refusal of an override path that reaches an object's identity.
const identityMessage = "Forbidden: an override may not change apiVersion, kind, metadata.name or metadata.namespace (nor metadata as a whole)"

// overrideValuesAdmission rejects override operations that could never apply (add or replace without a
// value) and overriders that reach an object's identity: plaintext operations, field overriders and image
// overriders with a path. (Labels, annotations, command and args cannot reach it.) The CRD's own rules
// cannot see `value` (schemaless JSON); an admission policy evaluates the object as it is. The override
// engine refuses identity changes too, whatever their path.
func overrideValuesAdmission() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	eachRule := func(check string) string {
		return "!has(object.spec.overrideRules) || object.spec.overrideRules.all(r, !has(r.overriders) || " + check + ")"
	}
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: overrideValuesPolicy},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: matching(policyGroups, []string{"overridepolicies", "clusteroverridepolicies"}, admissionregistrationv1.Create, admissionregistrationv1.Update),
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
				{
					Expression: eachRule("!has(r.overriders.plaintext) || r.overriders.plaintext.all(o, !" + reachesIdentity("o.path") + ")"),
					Message:    "spec.overrideRules[].overriders.plaintext[].path: " + identityMessage,
				},
				{
					Expression: eachRule("!has(r.overriders.fieldOverrider) || r.overriders.fieldOverrider.all(f, !" + reachesIdentity("f.fieldPath") + ")"),
					Message:    "spec.overrideRules[].overriders.fieldOverrider[].fieldPath: " + identityMessage,
				},
				{
					Expression: eachRule("!has(r.overriders.imageOverrider) || r.overriders.imageOverrider.all(i, " +
						"!has(i.predicate) || !" + reachesIdentity("i.predicate.path") + ")"),
					Message: "spec.overrideRules[].overriders.imageOverrider[].predicate.path: " + identityMessage,
				},
			},
		},
	}
	return policy, bindingFor(policy)
}

// unchanged is a CEL check that an update leaves the field of metadata as it was (both absent counts).
func unchanged(field string) string {
	return fmt.Sprintf("has(object.metadata.%[1]s) == has(oldObject.metadata.%[1]s) && "+
		"(!has(object.metadata.%[1]s) || object.metadata.%[1]s == oldObject.metadata.%[1]s)", field)
}

// agentWorksAdmission lets an agent change nothing of a Work but its status (a subresource of its own) and
// its finalizers, of which it may only remove: its role grants update on Works for the finalizer, and
// without this an agent could rewrite what its cluster runs, or a Work's labels and so the binding it
// reports to.
func agentWorksAdmission() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	const message = "an agent may change only a Work's status and remove its finalizers"
	forbidden := ptr.To(metav1.StatusReasonForbidden)
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: agentWorksPolicy},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: matching([]string{workv1alpha1.GroupVersion.Group}, []string{"works"}, admissionregistrationv1.Update),
			MatchConditions: []admissionregistrationv1.MatchCondition{{
				Name: "agents", Expression: fmt.Sprintf("%q in request.userInfo.groups", registration.AgentGroup),
			}},
			// Forbidden rather than Invalid: the request is well formed, the requester may not make it.
			Validations: []admissionregistrationv1.Validation{
				{Expression: "object.spec == oldObject.spec", Message: "spec: " + message, Reason: forbidden},
				{Expression: unchanged("labels"), Message: "metadata.labels: " + message, Reason: forbidden},
				{Expression: unchanged("annotations"), Message: "metadata.annotations: " + message, Reason: forbidden},
				{Expression: unchanged("ownerReferences"), Message: "metadata.ownerReferences: " + message, Reason: forbidden},
				{
					Expression: "!has(object.metadata.finalizers) || object.metadata.finalizers.all(f, " +
						"has(oldObject.metadata.finalizers) && f in oldObject.metadata.finalizers)",
					Message: "metadata.finalizers: " + message, Reason: forbidden,
				},
			},
		},
	}
	return policy, bindingFor(policy)
}

// purgeModeNamesPolicy is the name of the admission policy (and its binding) that warns about the older
// names of purge modes.
const purgeModeNamesPolicy = "flotilla-purge-mode-names"

// purgeModeNamesAdmission warns, without refusing, when a policy uses Immediately or Graciously, the purge
// mode names of older Karmada releases: Flotilla reads them as Directly and Gracefully, and the warning tells
// the user to write the current name, so policies migrate.
func purgeModeNamesAdmission() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	var validations []admissionregistrationv1.Validation
	for _, part := range []string{"cluster", "application"} {
		field := "object.spec.failover." + part + ".purgeMode"
		for _, old := range []policyv1alpha1.PurgeMode{policyv1alpha1.PurgeImmediately, policyv1alpha1.PurgeGraciously} {
			validations = append(validations, admissionregistrationv1.Validation{
				Expression: fmt.Sprintf("!has(object.spec.failover) || !has(object.spec.failover.%[1]s) || "+
					"!has(%[2]s) || %[2]s != '%[3]s'", part, field, old),
				Message: fmt.Sprintf("spec.failover.%s.purgeMode: %s is the older name of %s; write %s", part, old, old.Canonical(), old.Canonical()),
			})
		}
	}
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: purgeModeNamesPolicy},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    ptr.To(admissionregistrationv1.Ignore), // a warning is no reason to refuse a policy
			MatchConstraints: matching(policyGroups, []string{"propagationpolicies", "clusterpropagationpolicies"}, admissionregistrationv1.Create, admissionregistrationv1.Update),
			Validations:      validations,
		},
	}
	binding := bindingFor(policy)
	binding.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn}
	return policy, binding
}

// deletionProtectionPolicy is the name of the admission policy (and its binding) that refuses to delete
// objects labelled deletion-protected.
const deletionProtectionPolicy = "flotilla-deletion-protection"

// deletionProtectionAdmission refuses the deletion of any object on the hub that carries a deletion-protected
// label (Flotilla's or Karmada's) with the value Always, and says which label to remove to lift it. It
// applies to every resource, so a namespace holding a protected object cannot be emptied either until the
// label is removed: that is the point of protection.
func deletionProtectionAdmission() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	keys := fmt.Sprintf("['%s', '%s']", workv1alpha1.LabelDeletionProtected, workv1alpha1.LabelKarmadaDeletionProtected)
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: deletionProtectionPolicy},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: matching([]string{"*"}, []string{"*"}, admissionregistrationv1.Delete),
			MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "labelled",
				Expression: "has(oldObject.metadata.labels)"}},
			Variables: []admissionregistrationv1.Variable{{Name: "protectedBy",
				Expression: fmt.Sprintf("%s.filter(k, k in oldObject.metadata.labels && oldObject.metadata.labels[k] == '%s')", keys, workv1alpha1.DeletionProtectedAlways)}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: "size(variables.protectedBy) == 0",
				MessageExpression: "request.resource.resource + ' ' + request.name + ' is protected from deletion by its label ' + " +
					"variables.protectedBy[0] + '=" + workv1alpha1.DeletionProtectedAlways + "; remove the label to delete it: kubectl label ' + " +
					"request.resource.resource + ' ' + request.name + (request.namespace != '' ? ' -n ' + request.namespace : '') + ' ' + variables.protectedBy[0] + '-'",
				Reason: ptr.To(metav1.StatusReasonForbidden),
			}},
		},
	}
	return policy, bindingFor(policy)
}

// policyGroups are the groups whose policies the hub admits by one set of rules: Flotilla's, and Karmada's,
// whose objects are mirrored onto Flotilla's (internal/mirror) and are refused when they are written, as
// their twins would be.
var policyGroups = []string{policyv1alpha1.GroupVersion.Group, policyv1alpha1.KarmadaGroup}

// matching is what a policy applies to: the operations ops on resources of groups, in every version.
func matching(groups, resources []string, ops ...admissionregistrationv1.OperationType) *admissionregistrationv1.MatchResources {
	return &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
		RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: ops,
			Rule:       admissionregistrationv1.Rule{APIGroups: groups, APIVersions: []string{"*"}, Resources: resources},
		},
	}}}
}

// bindingFor binds an admission policy cluster-wide, denying what it rejects.
func bindingFor(policy *admissionregistrationv1.ValidatingAdmissionPolicy) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}
}

// InstallPolicies installs (or restores) the hub's admission policies. The API server enforces them a
// second or two later (it reloads policies once a second); WaitEnforced waits for that.
func InstallPolicies(ctx context.Context, cfg *rest.Config, s Settings) error {
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return err
	}
	clusterCredentials := func() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
		return clusterCredentialsAdmission(s)
	}
	// The override policy goes last: WaitEnforced probes it, and the API server loads policies in the
	// order they were written.
	for _, admission := range []func() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding){
		agentWorksAdmission, clusterCredentials, purgeModeNamesAdmission, clusterSetBindAdmission, builtinSetsAdmission,
		deletionProtectionAdmission, addOnBindAdmission, replicaSetAdmission, overrideValuesAdmission,
	} {
		policy, binding := admission()
		wantPolicy, wantBinding := policy.Spec, binding.Spec
		if _, err := controllerutil.CreateOrUpdate(ctx, c, policy, func() error { policy.Spec = wantPolicy; return nil }); err != nil {
			return fmt.Errorf("admission policy %s: %w", policy.Name, err)
		}
		if _, err := controllerutil.CreateOrUpdate(ctx, c, binding, func() error { binding.Spec = wantBinding; return nil }); err != nil {
			return fmt.Errorf("admission policy binding %s: %w", binding.Name, err)
		}
	}
	return nil
}

// WaitEnforced waits until the API server enforces the hub's admission rules: a dry run of an override
// without a value is refused (the policies are loaded), and so is one of a ClusterPropagationPolicy whose
// statePreservation jsonPath does not parse (the checks in Go run: in process, or through the webhook, which
// the API server must reach). Flotilla's CRDs must be established.
func WaitEnforced(ctx context.Context, cfg *rest.Config) error {
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return err
	}
	selectors := []policyv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap"}}
	probes := []struct {
		rule string
		obj  client.Object
	}{
		{"admission policy " + overrideValuesPolicy, &policyv1alpha1.ClusterOverridePolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "flotilla-admission-probe"},
			Spec: policyv1alpha1.OverrideSpec{
				ResourceSelectors: selectors,
				OverrideRules: []policyv1alpha1.RuleWithCluster{{Overriders: policyv1alpha1.Overriders{
					Plaintext: []policyv1alpha1.PlaintextOverrider{{Path: "/data/x", Operator: policyv1alpha1.OverriderOpAdd}},
				}}},
			},
		}},
		{"admission check " + propagationPolicyCheck.Name, &policyv1alpha1.ClusterPropagationPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "flotilla-admission-probe"},
			Spec: policyv1alpha1.PropagationSpec{
				ResourceSelectors: selectors,
				Failover: &policyv1alpha1.FailoverBehavior{Cluster: &policyv1alpha1.ClusterFailoverBehavior{
					StatePreservation: &policyv1alpha1.StatePreservation{Rules: []policyv1alpha1.StatePreservationRule{{AliasLabelName: "probe", JSONPath: "{.probe"}}},
				}},
			},
		}},
	}
	for _, probe := range probes {
		var last error
		err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			last = c.Create(ctx, probe.obj.DeepCopyObject().(client.Object), client.DryRunAll)
			return apierrors.IsInvalid(last) || apierrors.IsForbidden(last), nil
		})
		if err != nil {
			return fmt.Errorf("%s is not enforced (last answer: %v): %w", probe.rule, last, err)
		}
	}
	return nil
}
