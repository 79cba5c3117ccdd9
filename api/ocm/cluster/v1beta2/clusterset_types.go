package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// ManagedClusterSet groups Clusters so the set can be granted to namespaces. Mirrored onto Flotilla's
// ClusterSet of the same name (the built-in default and global sets are Flotilla's own and are not taken
// over). The exclusive label is Flotilla's cluster.flotilla.io/clusterset: Flotilla's Clusters are what the
// set holds.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=mclset;mclsets
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Empty",type=string,JSONPath=`.status.conditions[?(@.type=="ClusterSetEmpty")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ManagedClusterSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says which Clusters the set holds.
	// +optional
	Spec ManagedClusterSetSpec `json:"spec,omitempty"`

	// Status says whether the set holds any Cluster.
	// +optional
	Status ManagedClusterSetStatus `json:"status,omitempty"`
}

// ManagedClusterSetSpec says which Clusters a ManagedClusterSet holds.
type ManagedClusterSetSpec struct {
	// ClusterSelector picks the set's Clusters: by the exclusive label (the default) or a label selector.
	// +optional
	ClusterSelector clusterv1alpha1.ClusterSetSelector `json:"clusterSelector,omitempty"`
}

// ManagedClusterSetStatus says whether a ManagedClusterSet holds any Cluster.
type ManagedClusterSetStatus struct {
	// Conditions: ClusterSetEmpty.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ManagedClusterSetList is a list of ManagedClusterSets.
// +kubebuilder:object:root=true
type ManagedClusterSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ManagedClusterSet `json:"items"`
}

// ManagedClusterSetBinding grants a ManagedClusterSet (or any Flotilla ClusterSet) to its namespace; it must
// be named after the set. Writing one needs create on managedclustersets/bind (or Flotilla's
// clustersets/bind) for the set. Mirrored onto Flotilla's ClusterSetBinding of the same name and namespace.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=mclsetbinding;mclsetbindings
// +kubebuilder:subresource:status
// +kubebuilder:validation:XValidation:rule="self.metadata.name == self.spec.clusterSet",message="metadata.name must be spec.clusterSet"
// +kubebuilder:printcolumn:name="Set",type=string,JSONPath=`.spec.clusterSet`
// +kubebuilder:printcolumn:name="Bound",type=string,JSONPath=`.status.conditions[?(@.type=="Bound")].status`
type ManagedClusterSetBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec names the set.
	// +required
	Spec ManagedClusterSetBindingSpec `json:"spec"`

	// Status says whether the set exists.
	// +optional
	Status ManagedClusterSetBindingStatus `json:"status,omitempty"`
}

// ManagedClusterSetBindingSpec names the set a ManagedClusterSetBinding grants.
type ManagedClusterSetBindingSpec struct {
	// ClusterSet is the name of the set.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.clusterSet is immutable: bind another set with another ManagedClusterSetBinding"
	ClusterSet string `json:"clusterSet"`
}

// ManagedClusterSetBindingStatus says whether the set a ManagedClusterSetBinding names exists.
type ManagedClusterSetBindingStatus struct {
	// Conditions: Bound.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ManagedClusterSetBindingList is a list of ManagedClusterSetBindings.
// +kubebuilder:object:root=true
type ManagedClusterSetBindingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ManagedClusterSetBinding `json:"items"`
}
