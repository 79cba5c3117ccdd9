package admission

import (
	"context"
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-io/flotilla/api/addon/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/addon"
)

// addOnBindPolicy is the name of the admission policy (and its binding) that lets only who may bind a role
// grant it to an add-on's agents.
const addOnBindPolicy = "flotilla-addon-bind"

// addOnBindAdmission refuses an AddOn whose hub permissions its author may not bind, as a RoleBinding's
// author would be refused: the hub's controllers write the RoleBindings, and without this rule anyone who
// may write AddOns would grant any role through them. It checks the bind verb on each role named (a
// CurrentCluster ClusterRole cluster-wide, since it is bound in every cluster's namespace; a
// SingleNamespace role in its namespace), on creation and whenever the permissions change.
func addOnBindAdmission() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	const perms = "object.spec.registration.hubPermissions"
	rbac := "authorizer.group('rbac.authorization.k8s.io')"
	allowed := "(p.type == 'CurrentCluster' ? (has(p.currentCluster) && " + rbac + ".resource('clusterroles').name(p.currentCluster.clusterRoleName).check('bind').allowed()) : " +
		"(has(p.singleNamespace) && " + rbac + ".resource(p.singleNamespace.roleRef.kind == 'ClusterRole' ? 'clusterroles' : 'roles')" +
		".namespace(p.singleNamespace.namespace).name(p.singleNamespace.roleRef.name).check('bind').allowed()))"
	describe := "(p.type == 'CurrentCluster' && has(p.currentCluster) ? 'ClusterRole ' + p.currentCluster.clusterRoleName : " +
		"(has(p.singleNamespace) ? p.singleNamespace.roleRef.kind + ' ' + p.singleNamespace.roleRef.name + ' in namespace ' + p.singleNamespace.namespace : p.type))"
	unchanged := "(oldObject != null && has(oldObject.spec.registration) && has(oldObject.spec.registration.hubPermissions) && " +
		"oldObject.spec.registration.hubPermissions == " + perms + ")"
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: addOnBindPolicy},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: matching([]string{addonv1alpha1.GroupVersion.Group}, []string{"addons"}, admissionregistrationv1.Create, admissionregistrationv1.Update),
			MatchConditions: []admissionregistrationv1.MatchCondition{{
				Name: "has-hub-permissions", Expression: "has(object.spec.registration) && has(" + perms + ") && size(" + perms + ") > 0",
			}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: unchanged + " || " + perms + ".all(p, " + allowed + ")",
				// A message cannot ask the authorizer: it names every role granted.
				MessageExpression: "'spec.registration.hubPermissions: granting ' + " + perms + ".map(p, " + describe + ").join(', ') + " +
					"' to the add-on\\'s agents needs the bind verb on each, as a RoleBinding would (ask an administrator of the hub)'",
				Reason: ptr.To(metav1.StatusReasonForbidden),
			}},
		},
	}
	return policy, bindingFor(policy)
}

// addOnCheck refuses an AddOn the hub could not run as written: a configuration kind other than
// AddOnConfig, a placement config of a kind the add-on does not take, a rollout strategy the rollout could
// not follow, a SingleNamespace permission in a cluster's namespace (only CurrentCluster reaches those, each
// agent its own), health by Lease without registration (the agent has no identity to renew it with) or with
// a lease duration that is not positive, and a template manifest that is not an object with apiVersion,
// kind and metadata.name.
var addOnCheck = Check{
	Name:      "FlotillaAddOn",
	Resources: []schema.GroupResource{{Group: addonv1alpha1.GroupVersion.Group, Resource: "addons"}},
	Validate: func(u *unstructured.Unstructured) (field.ErrorList, error) {
		a := &addonv1alpha1.AddOn{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, a); err != nil {
			return nil, err
		}
		return validateAddOn(a), nil
	},
}

func validateAddOn(a *addonv1alpha1.AddOn) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	supported := map[string]bool{}
	for i, c := range a.Spec.SupportedConfigs {
		supported[c.Group+"/"+c.Resource] = true
		if c.Group != addonv1alpha1.GroupVersion.Group || c.Resource != addon.ConfigResource {
			errs = append(errs, field.NotSupported(spec.Child("supportedConfigs").Index(i), c.Resource+"."+c.Group,
				[]string{addon.ConfigResource + "." + addonv1alpha1.GroupVersion.Group}))
		}
	}
	for i, p := range a.Spec.InstallStrategy.Placements {
		at := spec.Child("installStrategy", "placements").Index(i)
		errs = append(errs, validateConfigRefs(p.Configs, supported, at.Child("configs"))...)
		if p.RolloutStrategy != nil {
			errs = append(errs, validateRollout(p.RolloutStrategy, true, at.Child("rolloutStrategy"))...)
		}
	}
	if r := a.Spec.Registration; r != nil {
		for i, p := range r.HubPermissions {
			if p.SingleNamespace == nil {
				continue
			}
			at := spec.Child("registration", "hubPermissions").Index(i).Child("singleNamespace", "namespace")
			if _, ok := clusterv1alpha1.ClusterOfNamespace(p.SingleNamespace.Namespace); ok {
				errs = append(errs, field.Invalid(at, p.SingleNamespace.Namespace,
					"a cluster's namespace: only a CurrentCluster permission reaches cluster namespaces, each agent its own"))
			} else if msgs := validation.IsDNS1123Label(p.SingleNamespace.Namespace); len(msgs) > 0 {
				errs = append(errs, field.Invalid(at, p.SingleNamespace.Namespace, strings.Join(msgs, "; ")))
			}
		}
	}
	if h := a.Spec.HealthCheck; h.Mode == addonv1alpha1.HealthLease {
		if a.Spec.Registration == nil {
			errs = append(errs, field.Invalid(spec.Child("healthCheck", "mode"), h.Mode,
				"health by Lease needs spec.registration: the add-on's agent renews the Lease with its hub identity"))
		}
	}
	if d := a.Spec.HealthCheck.LeaseDuration; d != nil && d.Duration <= 0 {
		errs = append(errs, field.Invalid(spec.Child("healthCheck", "leaseDuration"), d.Duration.String(), "must be positive"))
	}
	for i, m := range a.Spec.Template.Manifests {
		at := spec.Child("template", "manifests").Index(i)
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(m.Raw); err != nil {
			errs = append(errs, field.Invalid(at, "", "not a Kubernetes object: "+err.Error()))
			continue
		}
		if obj.GetName() == "" {
			errs = append(errs, field.Required(at.Child("metadata", "name"), "every manifest names its object"))
		}
	}
	return errs
}

// validateConfigRefs refuses configs of a kind the add-on does not take.
func validateConfigRefs(refs []addonv1alpha1.ConfigReference, supported map[string]bool, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, c := range refs {
		if !supported[c.Group+"/"+c.Resource] {
			errs = append(errs, field.Invalid(path.Index(i), c.Resource+"."+c.Group, "the add-on does not take this kind of config (spec.supportedConfigs)"))
		}
	}
	return errs
}

// addOnConfigCheck refuses an AddOnConfig whose customized variables name one the hub fills, or whose node
// selector is not one.
var addOnConfigCheck = Check{
	Name:      "FlotillaAddOnConfig",
	Resources: []schema.GroupResource{{Group: addonv1alpha1.GroupVersion.Group, Resource: "addonconfigs"}},
	Validate: func(u *unstructured.Unstructured) (field.ErrorList, error) {
		c := &addonv1alpha1.AddOnConfig{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, c); err != nil {
			return nil, err
		}
		var errs field.ErrorList
		spec := field.NewPath("spec")
		for i, v := range c.Spec.CustomizedVariables {
			if slices.Contains(addon.BuiltinVariables, v.Name) {
				errs = append(errs, field.Invalid(spec.Child("customizedVariables").Index(i).Child("name"), v.Name, "the hub fills this variable itself"))
			}
		}
		if np := c.Spec.NodePlacement; np != nil {
			for k, v := range np.NodeSelector {
				at := spec.Child("nodePlacement", "nodeSelector").Key(k)
				for _, msg := range append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...) {
					errs = append(errs, field.Invalid(at, v, msg))
				}
			}
		}
		return errs, nil
	},
}

// clusterAddOnCheck refuses a ClusterAddOn outside a cluster's namespace, and on creation one that names no
// AddOn or a config of a kind its AddOn does not take. (Updates are not refused when the AddOn is gone: the
// hub must still remove the finalizer of a disabled one.)
var clusterAddOnCheck = Check{
	Name:      "FlotillaClusterAddOn",
	Resources: []schema.GroupResource{{Group: addonv1alpha1.GroupVersion.Group, Resource: "clusteraddons"}},
	Admit: func(ctx context.Context, r client.Reader, req Request) error {
		if req.Subresource != "" || req.OldObject != nil {
			return nil
		}
		c := &addonv1alpha1.ClusterAddOn{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(req.Object.Object, c); err != nil {
			return err
		}
		gk := addonv1alpha1.GroupVersion.WithKind("ClusterAddOn").GroupKind()
		if _, ok := clusterv1alpha1.ClusterOfNamespace(req.Namespace); !ok {
			return apierrors.NewInvalid(gk, req.Name, field.ErrorList{field.Invalid(field.NewPath("metadata", "namespace"), req.Namespace,
				fmt.Sprintf("a ClusterAddOn lives in the namespace of the cluster it enables the add-on on (%s)", clusterv1alpha1.ClusterNamespace("CLUSTER")))})
		}
		a := &addonv1alpha1.AddOn{}
		if err := r.Get(ctx, client.ObjectKey{Name: req.Name}, a); apierrors.IsNotFound(err) {
			return apierrors.NewInvalid(gk, req.Name, field.ErrorList{field.NotFound(field.NewPath("metadata", "name"),
				req.Name+": a ClusterAddOn is named after the AddOn it enables, and there is no AddOn "+req.Name)})
		} else if err != nil {
			return err
		}
		supported := map[string]bool{}
		for _, s := range a.Spec.SupportedConfigs {
			supported[s.Group+"/"+s.Resource] = true
		}
		if errs := validateConfigRefs(c.Spec.Configs, supported, field.NewPath("spec", "configs")); len(errs) > 0 {
			return apierrors.NewInvalid(gk, req.Name, errs)
		}
		return nil
	},
}
