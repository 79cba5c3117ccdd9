package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LabelClusterManager names the cluster manager that publishes a ClusterProfile (the KEP's label).
const LabelClusterManager = "x-k8s.io/cluster-manager"

// ClusterManagerName is Flotilla's name as a cluster manager: the value of LabelClusterManager and of
// spec.clusterManager.name on the ClusterProfiles the hub publishes.
const ClusterManagerName = "flotilla"

// The conditions of a ClusterProfile the KEP defines.
const (
	// ConditionControlPlaneHealthy is True while the cluster's API server is healthy.
	ConditionControlPlaneHealthy = "ControlPlaneHealthy"
	// ConditionJoined is True while the cluster is registered with its cluster manager.
	ConditionJoined = "Joined"
)

// ClusterSetNamespace is the namespace of the ClusterProfiles of the Clusters in one exclusive ClusterSet, so
// RBAC on one namespace exposes one set (as the KEP suggests).
func ClusterSetNamespace(set string) string { return "flotilla-clusterset-" + set }

// ClusterProfile represents one cluster of a multi-cluster deployment.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Manager",type=string,JSONPath=`.spec.clusterManager.name`
// +kubebuilder:printcolumn:name="Healthy",type=string,JSONPath=`.status.conditions[?(@.type=="ControlPlaneHealthy")].status`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.version.kubernetes`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterProfile struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec names the cluster and its manager.
	// +required
	Spec ClusterProfileSpec `json:"spec"`

	// Status is what the cluster manager last observed of the cluster.
	// +optional
	Status ClusterProfileStatus `json:"status,omitempty"`
}

// ClusterProfileSpec names a cluster and the manager that publishes it.
type ClusterProfileSpec struct {
	// DisplayName is a human-readable name of the cluster.
	// +optional
	DisplayName string `json:"displayName,omitempty"`

	// ClusterManager is the cluster manager that publishes this profile.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="ClusterManager is immutable"
	ClusterManager ClusterManager `json:"clusterManager"`
}

// ClusterManager names a cluster manager.
type ClusterManager struct {
	// Name of the cluster manager.
	// +required
	Name string `json:"name"`
}

// ClusterProfileStatus is what the cluster manager last observed of the cluster.
type ClusterProfileStatus struct {
	// Conditions: ControlPlaneHealthy, Joined.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Version is the cluster's version.
	// +optional
	Version ClusterVersion `json:"version,omitempty"`

	// Properties describe the cluster (for Flotilla: region, zone, provider, cluster set).
	// +optional
	// +listType=map
	// +listMapKey=name
	Properties []Property `json:"properties,omitempty"`
}

// ClusterVersion is a cluster's version.
type ClusterVersion struct {
	// Kubernetes is the version of the cluster's kube-apiserver.
	// +optional
	Kubernetes string `json:"kubernetes,omitempty"`
}

// Property is one named value describing a cluster.
type Property struct {
	// Name of the property, a domain-prefixed name such as the cluster's region.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Value of the property.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Value string `json:"value"`

	// LastObservedTime is when the value was last seen. A pointer, unlike the upstream Go type, so that a
	// property without it is sent without it: a zero metav1.Time is sent as null, which the CRD refuses.
	// Flotilla leaves it out: its values come from the Cluster, which records no time of observation.
	// +optional
	LastObservedTime *metav1.Time `json:"lastObservedTime,omitempty"`
}

// ClusterProfileList is a list of ClusterProfiles.
// +kubebuilder:object:root=true
type ClusterProfileList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterProfile `json:"items"`
}
