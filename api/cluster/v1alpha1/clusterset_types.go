package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// LabelClusterSet puts a Cluster in the exclusive ClusterSet it names; a Cluster without it is in the
// built-in set ClusterSetDefault.
const LabelClusterSet = "cluster.flotilla.io/clusterset"

// The built-in ClusterSets, created by the hub and recreated when deleted: ClusterSetDefault holds every
// Cluster without the LabelClusterSet label (or labelled default), ClusterSetGlobal holds every Cluster.
const (
	ClusterSetDefault = "default"
	ClusterSetGlobal  = "global"
)

// ClusterSetSelectorType says how a ClusterSet picks its Clusters.
// +kubebuilder:validation:Enum=ExclusiveClusterSetLabel;LabelSelector
type ClusterSetSelectorType string

const (
	// ExclusiveClusterSetLabel: the Clusters labelled cluster.flotilla.io/clusterset=<set name>, so a
	// Cluster is in at most one such set.
	ExclusiveClusterSetLabel ClusterSetSelectorType = "ExclusiveClusterSetLabel"
	// LabelSelector: the Clusters spec.clusterSelector.labelSelector picks; sets of this type may overlap.
	LabelSelector ClusterSetSelectorType = "LabelSelector"
)

// ClusterSetConditionEmpty is True while a ClusterSet holds no Cluster.
const ClusterSetConditionEmpty = "ClusterSetEmpty"

// ClusterSetBindingConditionBound is True while the ClusterSet a ClusterSetBinding names exists.
const ClusterSetBindingConditionBound = "Bound"

// ResourceClusterSetsBind is the subresource whose create verb, on the ClusterSet by name, lets a user bind
// the set to a namespace (create or change a ClusterSetBinding naming it).
const ResourceClusterSetsBind = "clustersets/bind"

// ResourceClusterSetsJoin is the subresource whose create verb, on the ClusterSet by name, lets a user move a
// Cluster into or out of the set (set, change or remove its LabelClusterSet label); a Cluster without the
// label is in ClusterSetDefault.
const ResourceClusterSetsJoin = "clustersets/join"

// MaxBindingClusters bounds the Clusters a ClusterSetBinding's status lists; clusterCount counts them all.
const MaxBindingClusters = 1000

// ClusterSet groups Clusters, by an exclusive label or by a label selector, so that the set can be granted
// to namespaces by ClusterSetBindings: a namespaced policy places only on Clusters of the sets bound to its
// namespace.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=fcs,categories=flotilla
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Selector",type=string,JSONPath=`.spec.clusterSelector.selectorType`
// +kubebuilder:printcolumn:name="Clusters",type=integer,JSONPath=`.status.clusterCount`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says which Clusters are in the set.
	// +optional
	Spec ClusterSetSpec `json:"spec,omitempty"`

	// Status is what the hub last counted of the set.
	// +optional
	Status ClusterSetStatus `json:"status,omitempty"`
}

// ClusterSetSpec says which Clusters are in a ClusterSet.
type ClusterSetSpec struct {
	// ClusterSelector picks the set's Clusters. Omitted: the exclusive label.
	// +optional
	// +kubebuilder:default={selectorType: ExclusiveClusterSetLabel}
	ClusterSelector ClusterSetSelector `json:"clusterSelector,omitempty"`
}

// ClusterSetSelector picks a ClusterSet's Clusters.
// +kubebuilder:validation:XValidation:rule="self.selectorType == 'LabelSelector' || !has(self.labelSelector)",message="labelSelector is only for selectorType LabelSelector"
type ClusterSetSelector struct {
	// SelectorType is ExclusiveClusterSetLabel (the default) or LabelSelector.
	// +optional
	// +kubebuilder:default=ExclusiveClusterSetLabel
	SelectorType ClusterSetSelectorType `json:"selectorType,omitempty"`

	// LabelSelector picks the Clusters when selectorType is LabelSelector; empty picks every Cluster.
	// +optional
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
}

// ClusterSetStatus is what the hub last counted of a ClusterSet.
type ClusterSetStatus struct {
	// ClusterCount is how many Clusters are in the set.
	// +optional
	ClusterCount int32 `json:"clusterCount,omitempty"`

	// Conditions: ClusterSetEmpty.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Selector returns the label selector that picks the set's Clusters. An exclusive set picks the Clusters
// labelled with its name; the built-in default set also picks the Clusters without the label, which a label
// selector cannot say, so Contains is the rule and Selector the fast path for every other set.
func (s *ClusterSet) Selector() (labels.Selector, error) {
	if s.Spec.ClusterSelector.SelectorType == LabelSelector {
		if s.Spec.ClusterSelector.LabelSelector == nil {
			return labels.Everything(), nil
		}
		return metav1.LabelSelectorAsSelector(s.Spec.ClusterSelector.LabelSelector)
	}
	return labels.SelectorFromSet(labels.Set{LabelClusterSet: s.Name}), nil
}

// Contains says whether a Cluster with these labels is in the set. A selector that does not parse (refused at
// admission) holds no Cluster.
func (s *ClusterSet) Contains(clusterLabels map[string]string) bool {
	if s.Spec.ClusterSelector.SelectorType != LabelSelector && s.Name == ClusterSetDefault {
		set, ok := clusterLabels[LabelClusterSet]
		return !ok || set == ClusterSetDefault
	}
	sel, err := s.Selector()
	return err == nil && sel.Matches(labels.Set(clusterLabels))
}

// ClusterSetList is a list of ClusterSets.
// +kubebuilder:object:root=true
type ClusterSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterSet `json:"items"`
}

// ClusterSetBinding grants a ClusterSet to its namespace: the namespace's policies may place on the set's
// Clusters. Its name is the set's name. Creating or changing one needs create on clustersets/bind for the set.
// +kubebuilder:validation:XValidation:rule="self.metadata.name == self.spec.clusterSet",message="a ClusterSetBinding is named after the ClusterSet it binds: metadata.name must equal spec.clusterSet"
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=fcsb,categories=flotilla
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="ClusterSet",type=string,JSONPath=`.spec.clusterSet`
// +kubebuilder:printcolumn:name="Bound",type=string,JSONPath=`.status.conditions[?(@.type=="Bound")].status`
// +kubebuilder:printcolumn:name="Clusters",type=integer,JSONPath=`.status.clusterCount`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterSetBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec names the ClusterSet granted.
	Spec ClusterSetBindingSpec `json:"spec"`

	// Status says whether the set exists and which Clusters it grants.
	// +optional
	Status ClusterSetBindingStatus `json:"status,omitempty"`
}

// ClusterSetBindingSpec names the ClusterSet a ClusterSetBinding grants.
type ClusterSetBindingSpec struct {
	// ClusterSet is the name of the ClusterSet granted to the namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.clusterSet is immutable: bind another set with another ClusterSetBinding"
	ClusterSet string `json:"clusterSet"`
}

// ClusterSetBindingStatus says whether a ClusterSetBinding's set exists and which Clusters it grants, so a
// user who may not list Clusters still sees where the namespace may place.
type ClusterSetBindingStatus struct {
	// ClusterCount is how many Clusters the binding grants.
	// +optional
	ClusterCount int32 `json:"clusterCount,omitempty"`

	// Clusters are the names of the Clusters granted, sorted, at most 1000.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=1000
	Clusters []string `json:"clusters,omitempty"`

	// Conditions: Bound.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ClusterSetBindingList is a list of ClusterSetBindings.
// +kubebuilder:object:root=true
type ClusterSetBindingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterSetBinding `json:"items"`
}
