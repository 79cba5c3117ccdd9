package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AddOnConfig configures an add-on on the clusters that name it (as the AddOn's default, a placement's or a
// ClusterAddOn's config): variables of its template, image registries, node placement. OCM's
// AddOnDeploymentConfig, in part.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,categories=flotilla
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type AddOnConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the configuration.
	// +optional
	Spec AddOnConfigSpec `json:"spec,omitempty"`
}

// AddOnConfigSpec is an add-on's configuration on the clusters that take it.
type AddOnConfigSpec struct {
	// CustomizedVariables are the template's own variables: {{NAME}} in its manifests becomes value.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	CustomizedVariables []CustomizedVariable `json:"customizedVariables,omitempty"`

	// Registries rewrite container images: an image starting with source starts with mirror instead.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	Registries []ImageMirror `json:"registries,omitempty"`

	// NodePlacement is set on the pod templates the add-on installs.
	// +optional
	NodePlacement *NodePlacement `json:"nodePlacement,omitempty"`
}

// CustomizedVariable is one template variable.
type CustomizedVariable struct {
	// Name of the variable: upper case letters, digits and underscores, starting with a letter.
	// +required
	// +kubebuilder:validation:Pattern=`^[A-Z][A-Z0-9_]*$`
	// +kubebuilder:validation:MaxLength=255
	Name string `json:"name"`

	// Value of the variable.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Value string `json:"value,omitempty"`
}

// ImageMirror rewrites image references that start with Source.
type ImageMirror struct {
	// Source is the registry (or image prefix) to replace.
	// +required
	// +kubebuilder:validation:MinLength=1
	Source string `json:"source"`

	// Mirror replaces it.
	// +required
	// +kubebuilder:validation:MinLength=1
	Mirror string `json:"mirror"`
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

// +kubebuilder:object:root=true

// AddOnConfigList is a list of AddOnConfigs.
type AddOnConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AddOnConfig `json:"items"`
}
