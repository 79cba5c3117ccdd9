package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ManagedClusterAddOn installs an add-on on one cluster: it lives in the namespace named after the cluster
// (OCM's convention) and is named after the ClusterManagementAddOn. Mirrored onto the addon.flotilla.io
// ClusterAddOn of the same name in the cluster's Flotilla namespace (flotilla-cluster-<cluster>), whose
// status is copied back.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=mca;mcas
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Degraded",type=string,JSONPath=`.status.conditions[?(@.type=="Degraded")].status`
// +kubebuilder:printcolumn:name="Progressing",type=string,JSONPath=`.status.conditions[?(@.type=="Progressing")].status`
type ManagedClusterAddOn struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is how the add-on is installed on this cluster.
	// +required
	Spec ManagedClusterAddOnSpec `json:"spec"`

	// Status is how it runs there.
	// +optional
	Status ManagedClusterAddOnStatus `json:"status,omitempty"`
}

// ManagedClusterAddOnSpec is what one cluster changes of its add-on.
type ManagedClusterAddOnSpec struct {
	// InstallNamespace is the member namespace the add-on is installed in on this cluster. Omitted: the
	// add-on's (open-cluster-management-agent-addon).
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	InstallNamespace string `json:"installNamespace,omitempty"`

	// Configs replace, on this cluster, the configuration the add-on or its placement names for a kind
	// (addondeploymentconfigs).
	// +optional
	// +kubebuilder:validation:MaxItems=8
	Configs []AddOnConfig `json:"configs,omitempty"`
}

// ManagedClusterAddOnStatus is how an add-on runs on one cluster, copied from its ClusterAddOn.
type ManagedClusterAddOnStatus struct {
	// Conditions: Available, Progressing, Degraded, RegistrationApplied.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Namespace is the member namespace the add-on is installed in.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Registrations are the hub identities of the add-on's agent on this cluster.
	// +optional
	Registrations []RegistrationConfig `json:"registrations,omitempty"`

	// ConfigReferences are the configuration objects the cluster runs with.
	// +optional
	ConfigReferences []ConfigReference `json:"configReferences,omitempty"`

	// HealthCheck is how the health in Available is judged.
	// +optional
	HealthCheck HealthCheck `json:"healthCheck,omitempty"`
}

// RegistrationConfig is one hub identity of an add-on agent: a client certificate of a signer, for a subject.
type RegistrationConfig struct {
	// SignerName is the signer of the certificate (kubernetes.io/kube-apiserver-client).
	// +required
	// +kubebuilder:validation:MinLength=5
	// +kubebuilder:validation:MaxLength=571
	SignerName string `json:"signerName"`

	// Subject is the identity in the certificate.
	// +optional
	Subject Subject `json:"subject,omitempty"`
}

// Subject is a certificate's identity.
type Subject struct {
	// User is the user name (common name).
	// +optional
	User string `json:"user,omitempty"`

	// Groups are its groups (organizations).
	// +optional
	Groups []string `json:"groups,omitempty"`
}

// ConfigReference is one configuration object a cluster's add-on runs with.
type ConfigReference struct {
	ConfigGroupResource `json:",inline"`
	ConfigReferent      `json:",inline"`

	// DesiredConfig is the object and spec hash the cluster should run with.
	// +optional
	DesiredConfig *ConfigSpecHash `json:"desiredConfig,omitempty"`

	// LastAppliedConfig is the object and spec hash the cluster runs with.
	// +optional
	LastAppliedConfig *ConfigSpecHash `json:"lastAppliedConfig,omitempty"`
}

// ConfigSpecHash is a configuration object and the hash of its spec.
type ConfigSpecHash struct {
	ConfigReferent `json:",inline"`

	// SpecHash is the hash of the object's spec.
	// +optional
	SpecHash string `json:"specHash,omitempty"`
}

// HealthCheck says how an add-on's health is judged: Lease (its agent renews a Lease on the hub) or
// Customized (Flotilla: the health of what its Work installed).
type HealthCheck struct {
	// Mode is Lease or Customized.
	// +optional
	// +kubebuilder:validation:Enum=Lease;Customized
	Mode string `json:"mode,omitempty"`
}

// +kubebuilder:object:root=true

// ManagedClusterAddOnList is a list of ManagedClusterAddOns.
type ManagedClusterAddOnList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ManagedClusterAddOn `json:"items"`
}
