package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AddOnDeploymentConfig configures an add-on on the clusters that name it: template variables, image
// registries, node placement. Mirrored onto the addon.flotilla.io AddOnConfig of the same name and namespace.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced
type AddOnDeploymentConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the configuration.
	// +required
	Spec AddOnDeploymentConfigSpec `json:"spec"`
}

// AddOnDeploymentConfigSpec is an add-on's configuration on the clusters that take it.
type AddOnDeploymentConfigSpec struct {
	// CustomizedVariables are the template's own variables: {{NAME}} in its manifests becomes value. Names
	// are upper case letters, digits and underscores, starting with a letter (Flotilla's rule, narrower
	// than OCM's).
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	CustomizedVariables []CustomizedVariable `json:"customizedVariables,omitempty"`

	// NodePlacement is set on the pod templates the add-on installs.
	// +optional
	NodePlacement *NodePlacement `json:"nodePlacement,omitempty"`

	// Registries rewrite container images: an image starting with source starts with mirror instead.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	Registries []ImageMirror `json:"registries,omitempty"`
}

// CustomizedVariable is one template variable.
// +kubebuilder:validation:XValidation:rule="!(self.name in ['CLUSTER_NAME', 'INSTALL_NAMESPACE', 'HUB_KUBECONFIG', 'HUB_URL', 'HUB_KUBECONFIG_SECRET'])",message="the hub fills this variable itself"
type CustomizedVariable struct {
	// Name of the variable.
	// +required
	// +kubebuilder:validation:Pattern=`^[A-Z][A-Z0-9_]*$`
	// +kubebuilder:validation:MaxLength=255
	Name string `json:"name"`

	// Value of the variable.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Value string `json:"value,omitempty"`
}

// NodePlacement is where an add-on's pods run in a member.
type NodePlacement struct {
	// NodeSelector is set on the pod templates.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Tolerations are set on the pod templates.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
}

// ImageMirror rewrites image references that start with Source.
type ImageMirror struct {
	// Mirror replaces Source.
	// +required
	// +kubebuilder:validation:MinLength=1
	Mirror string `json:"mirror"`

	// Source is the registry (or image prefix) to replace. Required here (OCM allows it empty).
	// +required
	// +kubebuilder:validation:MinLength=1
	Source string `json:"source"`
}

// +kubebuilder:object:root=true

// AddOnDeploymentConfigList is a list of AddOnDeploymentConfigs.
type AddOnDeploymentConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AddOnDeploymentConfig `json:"items"`
}
