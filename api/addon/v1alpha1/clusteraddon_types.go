package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterAddOn enables an AddOn on one cluster and reports how it runs there. It lives in the cluster's
// namespace (flotilla-cluster-<cluster>) and is named after the AddOn. The install strategy creates it, or a
// person (`flotilla addon enable`); deleting it disables the add-on there: what it installed is removed and
// its agent's hub identity loses its rights.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,categories=flotilla
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Degraded",type=string,JSONPath=`.status.conditions[?(@.type=="Degraded")].status`
// +kubebuilder:printcolumn:name="Progressing",type=string,JSONPath=`.status.conditions[?(@.type=="Progressing")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterAddOn struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is how the add-on is installed on this cluster.
	// +optional
	Spec ClusterAddOnSpec `json:"spec,omitempty"`

	// Status is how it runs there.
	// +optional
	Status ClusterAddOnStatus `json:"status,omitempty"`
}

// ClusterAddOnSpec is what one cluster changes of its add-on.
type ClusterAddOnSpec struct {
	// InstallNamespace replaces the AddOn's install namespace on this cluster.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	InstallNamespace string `json:"installNamespace,omitempty"`

	// Configs replace, on this cluster, the configuration the AddOn or its placement names for a kind.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	Configs []ConfigReference `json:"configs,omitempty"`
}

// Condition types of a ClusterAddOn.
const (
	// ConditionAvailable: the add-on is healthy on the cluster (by its health check).
	ConditionAvailable = "Available"
	// ConditionProgressing: the cluster is being brought to the add-on's current revision.
	ConditionProgressing = "Progressing"
	// ConditionDegraded: the add-on cannot be installed as declared (a missing config, a manifest that does
	// not apply) or its health check fails.
	ConditionDegraded = "Degraded"
	// ConditionRegistrationApplied: the agent's hub identity has its permissions on the hub.
	ConditionRegistrationApplied = "RegistrationApplied"
)

// LabelAddOn names the add-on on what the hub creates for it: ClusterAddOns, Works, role bindings.
const LabelAddOn = "addon.flotilla.io/name"

// LabelInstalledBy on a ClusterAddOn says the install strategy created it (value: the AddOn's name): the
// strategy deletes it when its placements no longer decide on the cluster. One created by hand has none,
// and the strategy leaves it alone.
const LabelInstalledBy = "addon.flotilla.io/installed-by"

// ClusterAddOnStatus is how an add-on runs on one cluster.
type ClusterAddOnStatus struct {
	// ObservedGeneration is the generation this status speaks of.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Namespace is the member namespace the add-on is installed in.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Revision is the add-on revision the cluster runs (its content hash: the template and configuration).
	// +optional
	Revision string `json:"revision,omitempty"`

	// ConfigReferences are the configuration objects the cluster runs with, and the hash of each one's spec.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	ConfigReferences []ConfigStatus `json:"configReferences,omitempty"`

	// HealthCheck is how the health in Available is judged.
	// +optional
	HealthCheck HealthCheck `json:"healthCheck,omitempty"`

	// Registrations are the hub identities of the add-on's agent on this cluster.
	// +optional
	// +kubebuilder:validation:MaxItems=4
	Registrations []RegistrationStatus `json:"registrations,omitempty"`

	// Conditions: Available, Progressing, Degraded, RegistrationApplied.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ConfigStatus is one configuration object a cluster's add-on runs with.
type ConfigStatus struct {
	ConfigReference `json:",inline"`

	// SpecHash is the hash of the object's spec the cluster runs with.
	// +optional
	SpecHash string `json:"specHash,omitempty"`
}

// RegistrationStatus is one hub identity of an add-on agent.
type RegistrationStatus struct {
	// User is the identity's user name (the certificate's common name).
	// +required
	User string `json:"user"`

	// Groups are its groups (the certificate's organizations).
	// +optional
	Groups []string `json:"groups,omitempty"`

	// SecretName is the Secret, in the install namespace of the member, that holds the credential.
	// +optional
	SecretName string `json:"secretName,omitempty"`
}

// +kubebuilder:object:root=true

// ClusterAddOnList is a list of ClusterAddOns.
type ClusterAddOnList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterAddOn `json:"items"`
}
