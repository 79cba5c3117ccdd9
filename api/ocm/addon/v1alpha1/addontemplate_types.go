package v1alpha1

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// AddOnTemplate is what a template add-on installs in each cluster and the hub permissions of its agent. A
// ClusterManagementAddOn names it as the default config of resource addontemplates; its content becomes
// that add-on's AddOn template and registration.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:printcolumn:name="Addon Name",type=string,JSONPath=`.spec.addonName`
type AddOnTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the template.
	// +required
	Spec AddOnTemplateSpec `json:"spec"`
}

// AddOnTemplateSpec is what an add-on installs and what its agent may do on the hub.
type AddOnTemplateSpec struct {
	// AddonName is the add-on this template is for: the name of its ClusterManagementAddOn.
	// +required
	// +kubebuilder:validation:MinLength=1
	AddonName string `json:"addonName"`

	// AgentSpec is what the add-on installs in each cluster.
	// +required
	AgentSpec AgentSpec `json:"agentSpec"`

	// Registration gives the add-on's agent a hub identity with these permissions (KubeClient only).
	// +optional
	// +kubebuilder:validation:MaxItems=1
	Registration []RegistrationSpec `json:"registration,omitempty"`
}

// AgentSpec is what an add-on installs in each cluster.
type AgentSpec struct {
	// Workload holds the manifests.
	// +required
	Workload ManifestsTemplate `json:"workload"`
}

// ManifestsTemplate holds the manifests an add-on installs. Strings may hold {{CLUSTER_NAME}},
// {{INSTALL_NAMESPACE}}, {{HUB_KUBECONFIG}} and the customizedVariables of the cluster's
// AddOnDeploymentConfig.
type ManifestsTemplate struct {
	// Manifests are the objects installed in each cluster.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	Manifests []workv1alpha1.Manifest `json:"manifests"`
}

// RegistrationSpec is a hub identity of an add-on's agent.
// +kubebuilder:validation:XValidation:rule="has(self.kubeClient)",message="a KubeClient registration needs kubeClient"
type RegistrationSpec struct {
	// Type is KubeClient: a client certificate for the hub's API, with kubeClient's permissions.
	// (CustomSigner is not served: Flotilla signs add-on identities for its own API only.)
	// +required
	// +kubebuilder:validation:Enum=KubeClient
	Type string `json:"type"`

	// KubeClient is what the identity may do on the hub.
	// +optional
	KubeClient *KubeClientRegistrationConfig `json:"kubeClient,omitempty"`
}

// KubeClientRegistrationConfig is what an add-on agent's hub identity may do.
type KubeClientRegistrationConfig struct {
	// HubPermissions are bound to the agent of each cluster.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	HubPermissions []HubPermissionConfig `json:"hubPermissions,omitempty"`
}

// HubPermissionConfig is one role bound to an add-on agent on the hub.
// +kubebuilder:validation:XValidation:rule="self.type != 'CurrentCluster' || (has(self.currentCluster) && !has(self.singleNamespace))",message="a CurrentCluster permission has currentCluster and no singleNamespace"
// +kubebuilder:validation:XValidation:rule="self.type != 'SingleNamespace' || (has(self.singleNamespace) && !has(self.currentCluster))",message="a SingleNamespace permission has singleNamespace and no currentCluster"
type HubPermissionConfig struct {
	// Type is CurrentCluster (a ClusterRole bound in the agent's own cluster namespace) or SingleNamespace.
	// +required
	// +kubebuilder:validation:Enum=CurrentCluster;SingleNamespace
	Type string `json:"type"`

	// CurrentCluster names the ClusterRole bound in the agent's cluster namespace.
	// +optional
	CurrentCluster *CurrentClusterBindingConfig `json:"currentCluster,omitempty"`

	// SingleNamespace binds a role in one namespace of the hub.
	// +optional
	SingleNamespace *SingleNamespaceBindingConfig `json:"singleNamespace,omitempty"`
}

// CurrentClusterBindingConfig names the ClusterRole bound in the agent's cluster namespace.
type CurrentClusterBindingConfig struct {
	// ClusterRoleName is the ClusterRole bound.
	// +required
	// +kubebuilder:validation:MinLength=1
	ClusterRoleName string `json:"clusterRoleName"`
}

// SingleNamespaceBindingConfig binds a role in one namespace of the hub.
type SingleNamespaceBindingConfig struct {
	// Namespace the role is bound in.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`

	// RoleRef is the Role or ClusterRole bound.
	// +required
	// +kubebuilder:validation:XValidation:rule="has(self.apiGroup) && self.apiGroup == 'rbac.authorization.k8s.io' && (self.kind == 'Role' || self.kind == 'ClusterRole')",message="roleRef is a Role or ClusterRole of rbac.authorization.k8s.io"
	RoleRef rbacv1.RoleRef `json:"roleRef"`
}

// +kubebuilder:object:root=true

// AddOnTemplateList is a list of AddOnTemplates.
type AddOnTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AddOnTemplate `json:"items"`
}
