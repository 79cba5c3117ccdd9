package mirror

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	addonv1alpha1 "github.com/flotilla-io/flotilla/api/addon/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	ocmaddonv1alpha1 "github.com/flotilla-io/flotilla/api/ocm/addon/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// +kubebuilder:rbac:groups=addon.open-cluster-management.io,resources=*,verbs=get;list;watch
// +kubebuilder:rbac:groups=addon.open-cluster-management.io,resources=*/status,verbs=update
// +kubebuilder:rbac:groups=addon.open-cluster-management.io,resources=managedclusteraddons,verbs=update
// +kubebuilder:rbac:groups=addon.flotilla.io,resources=addons;clusteraddons;addonconfigs,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups=addon.flotilla.io,resources=clusteraddons,verbs=delete

// OCM is every OCM kind the hub serves (hub --ocm-apis), with its Flotilla twin: the add-on kinds, the
// cluster set and placement kinds (ocmCluster; the placement decisions go the other way, Decisions) and the
// ManifestWork (ocm_work.go). The add-on kinds' shapes differ from the twins', so each is converted: a
// ClusterManagementAddOn and the AddOnTemplate it names become one AddOn; a ManagedClusterAddOn, in the
// namespace named after its cluster, becomes the ClusterAddOn in the cluster's Flotilla namespace; an
// AddOnDeploymentConfig becomes an AddOnConfig. The AddOnTemplate has no twin of its own.
var OCM = append([]Kind{
	{Peer: ocmKind("ClusterManagementAddOn"), Twin: addonv1alpha1.GroupVersion.WithKind("AddOn"),
		Spec: typed(addOnSpec), Status: typedStatus(clusterManagementAddOnStatus),
		Follows: []Follow{{Kind: ocmKind("AddOnTemplate"), Peers: addOnsOfTemplate}}},
	{Peer: ocmKind("ManagedClusterAddOn"), Twin: addonv1alpha1.GroupVersion.WithKind("ClusterAddOn"),
		Spec: typed(clusterAddOnSpec), Status: typedStatus(managedClusterAddOnStatus),
		TwinNamespace: clusterNamespaceOf,
		// Admission refuses a ClusterAddOn whose AddOn does not exist yet: it is mirrored again when it does.
		Follows: []Follow{{Kind: addonv1alpha1.GroupVersion.WithKind("AddOn"), Peers: managedClusterAddOnsOf}},
		Labels: func(peer client.Object) map[string]string {
			return map[string]string{addonv1alpha1.LabelAddOn: peer.GetName()}
		}},
	{Peer: ocmKind("AddOnDeploymentConfig"), Twin: addonv1alpha1.GroupVersion.WithKind("AddOnConfig"),
		Spec: typed(addOnConfigSpec)},
	ManifestWork,
}, ocmCluster...)

func ocmKind(kind string) schema.GroupVersionKind {
	return ocmaddonv1alpha1.GroupVersion.WithKind(kind)
}

// clusterNamespaceOf is the Flotilla namespace of the cluster an OCM namespace is named after; a
// ManagedClusterAddOn written in a Flotilla cluster namespace stays there.
func clusterNamespaceOf(ns string) string {
	if _, ok := clusterv1alpha1.ClusterOfNamespace(ns); ok {
		return ns
	}
	return clusterv1alpha1.ClusterNamespace(ns)
}

// typed makes a Kind.Spec of a conversion from the peer object, as P, to the twin's spec, as S.
func typed[P any, S any](convert func(ctx context.Context, r client.Reader, peer *P) (*S, error)) func(context.Context, client.Reader, *unstructured.Unstructured) (map[string]any, error) {
	return func(ctx context.Context, r client.Reader, u *unstructured.Unstructured) (map[string]any, error) {
		peer := new(P)
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, peer); err != nil {
			return nil, refuse("%w", err)
		}
		spec, err := convert(ctx, r, peer)
		if err != nil {
			return nil, err
		}
		return runtime.DefaultUnstructuredConverter.ToUnstructured(spec)
	}
}

// typedStatus makes a Kind.Status of a conversion from the twin's status, as T, to the peer's, as P.
func typedStatus[T any, P any](convert func(twin *T) *P) func(map[string]any) (map[string]any, error) {
	return func(u map[string]any) (map[string]any, error) {
		twin := new(T)
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, twin); err != nil {
			return nil, err
		}
		return runtime.DefaultUnstructuredConverter.ToUnstructured(convert(twin))
	}
}

// addOnSpec is the AddOn of a ClusterManagementAddOn: its metadata, install strategy and configs, and the
// template and registration of the AddOnTemplate its supportedConfigs name as the addontemplates default.
func addOnSpec(ctx context.Context, r client.Reader, cma *ocmaddonv1alpha1.ClusterManagementAddOn) (*addonv1alpha1.AddOnSpec, error) {
	spec := &addonv1alpha1.AddOnSpec{
		DisplayName:      cma.Spec.AddOnMeta.DisplayName,
		Description:      cma.Spec.AddOnMeta.Description,
		InstallNamespace: ocmaddonv1alpha1.DefaultAgentNamespace,
		InstallStrategy:  addonv1alpha1.InstallStrategy{Type: addonv1alpha1.InstallManual},
		HealthCheck:      addonv1alpha1.HealthCheck{Mode: addonv1alpha1.HealthWork},
	}
	templateName := ""
	for _, c := range cma.Spec.SupportedConfigs {
		switch {
		case c.Group == ocmaddonv1alpha1.GroupVersion.Group && c.Resource == ocmaddonv1alpha1.ResourceAddOnTemplates:
			if c.DefaultConfig == nil {
				return nil, refuse("supportedConfigs: addontemplates has no defaultConfig: name the AddOnTemplate to install")
			}
			templateName = c.DefaultConfig.Name
		case c.Group == ocmaddonv1alpha1.GroupVersion.Group && c.Resource == ocmaddonv1alpha1.ResourceAddOnDeploymentConfigs:
			meta := addonv1alpha1.ConfigMeta{Group: addonv1alpha1.GroupVersion.Group, Resource: addOnConfigsResource}
			if d := c.DefaultConfig; d != nil {
				if d.Namespace == "" {
					return nil, refuse("supportedConfigs: the default addondeploymentconfig %s needs a namespace", d.Name)
				}
				meta.DefaultConfig = &addonv1alpha1.ConfigName{Name: d.Name, Namespace: d.Namespace}
			}
			spec.SupportedConfigs = append(spec.SupportedConfigs, meta)
		default:
			return nil, refuse("supportedConfigs: %s is not served: Flotilla runs template add-ons, configured by addondeploymentconfigs", groupResource(c.ConfigGroupResource))
		}
	}
	if templateName == "" {
		return nil, refuse("not a template add-on (supportedConfigs names no addontemplates default): Flotilla serves template add-ons only")
	}
	template, err := getTemplate(ctx, r, templateName)
	if err != nil {
		return nil, err
	}
	if template.Spec.AddonName != cma.Name {
		return nil, refuse("AddOnTemplate %s is for add-on %q, not %q", templateName, template.Spec.AddonName, cma.Name)
	}
	if spec.Template.Manifests, err = templateManifests(cma.Name, template); err != nil {
		return nil, refuse("AddOnTemplate %s: %w", templateName, err)
	}
	spec.Registration = registration(template.Spec.Registration)
	if cma.Spec.InstallStrategy.Type == "Placements" {
		spec.InstallStrategy.Type = addonv1alpha1.InstallPlacements
		for _, p := range cma.Spec.InstallStrategy.Placements {
			configs, err := configReferences(p.Configs)
			if err != nil {
				return nil, refuse("placement %s/%s: %w", p.Namespace, p.Name, err)
			}
			rollout, err := rolloutStrategy(p.RolloutStrategy)
			if err != nil {
				return nil, refuse("placement %s/%s: %w", p.Namespace, p.Name, err)
			}
			spec.InstallStrategy.Placements = append(spec.InstallStrategy.Placements, addonv1alpha1.PlacementStrategy{
				Name: p.Name, Namespace: p.Namespace, Configs: configs, RolloutStrategy: rollout})
		}
	}
	return spec, nil
}

// addOnConfigsResource is the plural of AddOnConfig.
const addOnConfigsResource = "addonconfigs"

// getTemplate reads an AddOnTemplate; one that does not exist (yet) is the add-on's to fix, and is waited
// for: its creation mirrors the add-on again.
func getTemplate(ctx context.Context, r client.Reader, name string) (*ocmaddonv1alpha1.AddOnTemplate, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(ocmKind("AddOnTemplate"))
	err := r.Get(ctx, types.NamespacedName{Name: name}, u)
	if apierrors.IsNotFound(err) {
		return nil, refuse("AddOnTemplate %s not found", name)
	}
	if err != nil {
		return nil, err
	}
	template := &ocmaddonv1alpha1.AddOnTemplate{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, template); err != nil {
		return nil, refuse("AddOnTemplate %s: %w", name, err)
	}
	return template, nil
}

// addOnsOfTemplate are the ClusterManagementAddOns that name an AddOnTemplate as their template.
func addOnsOfTemplate(ctx context.Context, r client.Reader, template client.Object) []reconcile.Request {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(ocmKind("ClusterManagementAddOnList"))
	if err := r.List(ctx, list); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, u := range list.Items {
		cma := &ocmaddonv1alpha1.ClusterManagementAddOn{}
		if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, cma) != nil {
			continue
		}
		for _, c := range cma.Spec.SupportedConfigs {
			if c.Resource == ocmaddonv1alpha1.ResourceAddOnTemplates && c.DefaultConfig != nil && c.DefaultConfig.Name == template.GetName() {
				out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: cma.Name}})
			}
		}
	}
	return out
}

// managedClusterAddOnsOf are the ManagedClusterAddOns of an add-on (named after it), in every cluster.
func managedClusterAddOnsOf(ctx context.Context, r client.Reader, addon client.Object) []reconcile.Request {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(ocmKind("ManagedClusterAddOnList"))
	if err := r.List(ctx, list); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, u := range list.Items {
		if u.GetName() == addon.GetName() {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()}})
		}
	}
	return out
}

// registration is an AddOnTemplate's KubeClient registration as the AddOn's.
func registration(in []ocmaddonv1alpha1.RegistrationSpec) *addonv1alpha1.Registration {
	if len(in) == 0 || in[0].KubeClient == nil {
		return nil
	}
	out := &addonv1alpha1.Registration{}
	for _, p := range in[0].KubeClient.HubPermissions {
		perm := addonv1alpha1.HubPermission{Type: addonv1alpha1.HubPermissionType(p.Type)}
		if c := p.CurrentCluster; c != nil {
			perm.CurrentCluster = &addonv1alpha1.CurrentClusterPermission{ClusterRoleName: c.ClusterRoleName}
		}
		if s := p.SingleNamespace; s != nil {
			perm.SingleNamespace = &addonv1alpha1.SingleNamespacePermission{Namespace: s.Namespace,
				RoleRef: addonv1alpha1.RoleRef{Kind: s.RoleRef.Kind, Name: s.RoleRef.Name}}
		}
		out.HubPermissions = append(out.HubPermissions, perm)
	}
	return out
}

// configReferences are OCM config references as Flotilla's: addondeploymentconfigs become addonconfigs (the
// twins, of the same names); no other kind is served.
func configReferences(in []ocmaddonv1alpha1.AddOnConfig) ([]addonv1alpha1.ConfigReference, error) {
	var out []addonv1alpha1.ConfigReference
	for _, c := range in {
		if c.Group != ocmaddonv1alpha1.GroupVersion.Group || c.Resource != ocmaddonv1alpha1.ResourceAddOnDeploymentConfigs {
			return nil, fmt.Errorf("configs: %s is not served: only addondeploymentconfigs of %s", groupResource(c.ConfigGroupResource), ocmaddonv1alpha1.GroupVersion.Group)
		}
		out = append(out, addonv1alpha1.ConfigReference{Group: addonv1alpha1.GroupVersion.Group, Resource: addOnConfigsResource,
			ConfigName: addonv1alpha1.ConfigName{Name: c.Name, Namespace: c.Namespace}})
	}
	return out, nil
}

func groupResource(gr ocmaddonv1alpha1.ConfigGroupResource) string {
	if gr.Group == "" {
		return gr.Resource
	}
	return gr.Resource + "." + gr.Group
}

// rolloutStrategy is OCM's rollout strategy as Flotilla's: the tuning of Progressive or ProgressivePerGroup
// becomes Flotilla's progressive tuning; a progressDeadline of None is none.
func rolloutStrategy(in *ocmaddonv1alpha1.RolloutStrategy) (*policyv1alpha1.RolloutStrategy, error) {
	if in == nil {
		return nil, nil
	}
	out := &policyv1alpha1.RolloutStrategy{Type: policyv1alpha1.RolloutType(in.Type)}
	if out.Type == "" {
		out.Type = policyv1alpha1.RolloutType("All")
	}
	var (
		config    ocmaddonv1alpha1.RolloutConfig
		mandatory []ocmaddonv1alpha1.MandatoryDecisionGroup
		progress  = &policyv1alpha1.ProgressiveRollout{}
	)
	switch {
	case in.Type == "Progressive" && in.Progressive != nil:
		config, mandatory, progress.MaxConcurrency = in.Progressive.RolloutConfig, in.Progressive.MandatoryDecisionGroups, in.Progressive.MaxConcurrency
	case in.Type == "ProgressivePerGroup" && in.ProgressivePerGroup != nil:
		config, mandatory = in.ProgressivePerGroup.RolloutConfig, in.ProgressivePerGroup.MandatoryDecisionGroups
	default:
		return out, nil
	}
	for _, g := range mandatory {
		progress.MandatoryDecisionGroups = append(progress.MandatoryDecisionGroups, policyv1alpha1.MandatoryDecisionGroup{GroupName: g.GroupName, GroupIndex: g.GroupIndex})
	}
	progress.MinSuccessTime, progress.MaxFailures = config.MinSuccessTime, config.MaxFailures
	if d := config.ProgressDeadline; d != "" && d != "None" {
		deadline, err := time.ParseDuration(d)
		if err != nil {
			return nil, fmt.Errorf("progressDeadline %q: %w", d, err)
		}
		progress.ProgressDeadline = &metav1.Duration{Duration: deadline}
	}
	out.Progressive = progress
	return out, nil
}

// clusterAddOnSpec is the ClusterAddOn of a ManagedClusterAddOn.
func clusterAddOnSpec(_ context.Context, _ client.Reader, mca *ocmaddonv1alpha1.ManagedClusterAddOn) (*addonv1alpha1.ClusterAddOnSpec, error) {
	configs, err := configReferences(mca.Spec.Configs)
	if err != nil {
		return nil, refuse("%w", err)
	}
	return &addonv1alpha1.ClusterAddOnSpec{InstallNamespace: mca.Spec.InstallNamespace, Configs: configs}, nil
}

// addOnConfigSpec is the AddOnConfig of an AddOnDeploymentConfig: the same fields.
func addOnConfigSpec(_ context.Context, _ client.Reader, adc *ocmaddonv1alpha1.AddOnDeploymentConfig) (*addonv1alpha1.AddOnConfigSpec, error) {
	out := &addonv1alpha1.AddOnConfigSpec{}
	for _, v := range adc.Spec.CustomizedVariables {
		out.CustomizedVariables = append(out.CustomizedVariables, addonv1alpha1.CustomizedVariable{Name: v.Name, Value: v.Value})
	}
	for _, r := range adc.Spec.Registries {
		out.Registries = append(out.Registries, addonv1alpha1.ImageMirror{Source: r.Source, Mirror: r.Mirror})
	}
	if p := adc.Spec.NodePlacement; p != nil {
		out.NodePlacement = &addonv1alpha1.NodePlacement{NodeSelector: p.NodeSelector, Tolerations: p.Tolerations}
	}
	return out, nil
}
