package v1alpha1

// ConfigGroupResource names a kind of configuration object by group and plural resource.
type ConfigGroupResource struct {
	// Group of the configuration kind; empty for the core group.
	// +optional
	// +kubebuilder:default=""
	Group string `json:"group"`

	// Resource of the configuration kind, plural.
	// +required
	// +kubebuilder:validation:MinLength=1
	Resource string `json:"resource"`
}

// ConfigReferent names one configuration object.
type ConfigReferent struct {
	// Namespace of the object; empty for a cluster-scoped one.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Name of the object.
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// AddOnConfig names one configuration object of a kind.
// +kubebuilder:validation:XValidation:rule="self.resource != 'addondeploymentconfigs' || (has(self.namespace) && size(self.namespace) > 0)",message="an addondeploymentconfigs config needs a namespace"
type AddOnConfig struct {
	ConfigGroupResource `json:",inline"`
	ConfigReferent      `json:",inline"`
}
