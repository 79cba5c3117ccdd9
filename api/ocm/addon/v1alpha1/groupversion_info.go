// Package v1alpha1 holds Open Cluster Management's add-on kinds (addon.open-cluster-management.io/v1alpha1:
// ClusterManagementAddOn, ManagedClusterAddOn, AddOnTemplate, AddOnDeploymentConfig), written here from OCM's
// published CRDs because its Go module is not served to this build. The hub serves them (hub --ocm-apis) so a
// template-based OCM add-on is applied as it is; internal/mirror keeps each one as the addon.flotilla.io
// object that does the work. Only the fields Flotilla acts on are in the schemas: any other is refused as
// unknown, never taken and ignored.
// +kubebuilder:object:generate=true
// +groupName=addon.open-cluster-management.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the group and version of this API.
var GroupVersion = schema.GroupVersion{Group: "addon.open-cluster-management.io", Version: "v1alpha1"}

var (
	// SchemeBuilder registers this API's kinds with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds this API's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion,
		&ClusterManagementAddOn{}, &ClusterManagementAddOnList{},
		&ManagedClusterAddOn{}, &ManagedClusterAddOnList{},
		&AddOnTemplate{}, &AddOnTemplateList{},
		&AddOnDeploymentConfig{}, &AddOnDeploymentConfigList{},
	)
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}

// Resources of this group that add-ons name in their configs.
const (
	// ResourceAddOnTemplates is the plural of AddOnTemplate: the template a ClusterManagementAddOn installs is
	// the default config of this resource among its supportedConfigs.
	ResourceAddOnTemplates = "addontemplates"
	// ResourceAddOnDeploymentConfigs is the plural of AddOnDeploymentConfig.
	ResourceAddOnDeploymentConfigs = "addondeploymentconfigs"
)

// DefaultAgentNamespace is the member namespace OCM installs add-on agents in unless told otherwise.
const DefaultAgentNamespace = "open-cluster-management-agent-addon"

// KubeAPIServerClientSigner is the signer of add-on agents' hub client certificates.
const KubeAPIServerClientSigner = "kubernetes.io/kube-apiserver-client"
