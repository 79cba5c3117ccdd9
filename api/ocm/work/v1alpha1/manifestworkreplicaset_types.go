package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ocmaddonv1alpha1 "github.com/flotilla-io/flotilla/api/ocm/addon/v1alpha1"
	ocmworkv1 "github.com/flotilla-io/flotilla/api/ocm/work/v1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// LabelReplicaSet on a ManifestWork names the ManifestWorkReplicaSet that wrote it, as <namespace>.<name>.
const LabelReplicaSet = "work.open-cluster-management.io/manifestworkreplicaset"

// FinalizerCleanup holds a ManifestWorkReplicaSet until its ManifestWorks, in other namespaces, are deleted.
const FinalizerCleanup = "work.open-cluster-management.io/manifest-work-cleanup"

// Condition types of a ManifestWorkReplicaSet, as OCM names them.
const (
	// ConditionPlacementVerified: every placementRef names a Placement that decided on clusters.
	ConditionPlacementVerified = "PlacementVerified"
	// ConditionPlacementRolledOut: every placement's rollout of the current template is complete.
	ConditionPlacementRolledOut = "PlacementRolledOut"
	// ConditionManifestworkApplied: every ManifestWork is applied in its cluster.
	ConditionManifestworkApplied = "ManifestworkApplied"
)

// ManifestWorkReplicaSet places one ManifestWork, of its template, in the namespace of every cluster its
// placements decide on, named after it, and rolls template changes out per placement.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=mwrs
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Placement",type=string,JSONPath=`.status.conditions[?(@.type=="PlacementVerified")].reason`
// +kubebuilder:printcolumn:name="Found",type=string,JSONPath=`.status.conditions[?(@.type=="PlacementVerified")].status`
// +kubebuilder:printcolumn:name="ManifestWorks",type=string,JSONPath=`.status.conditions[?(@.type=="ManifestworkApplied")].reason`
// +kubebuilder:printcolumn:name="Applied",type=string,JSONPath=`.status.conditions[?(@.type=="ManifestworkApplied")].status`
type ManifestWorkReplicaSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the ManifestWork template and the placements it goes to.
	// +required
	Spec ManifestWorkReplicaSetSpec `json:"spec"`

	// Status is how the ManifestWorks and the rollouts stand.
	// +optional
	Status ManifestWorkReplicaSetStatus `json:"status,omitempty"`
}

// ManifestWorkReplicaSetSpec is a ManifestWork template and the placements it goes to.
type ManifestWorkReplicaSetSpec struct {
	// ManifestWorkTemplate is the spec of every ManifestWork written.
	// +required
	ManifestWorkTemplate ocmworkv1.ManifestWorkSpec `json:"manifestWorkTemplate"`

	// PlacementRefs name Placements in this namespace (OCM's or Flotilla's: an OCM Placement is mirrored onto a
	// Flotilla one of the same name). A cluster decided by several gets one ManifestWork, rolled out by the
	// first placement that decides on it.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	PlacementRefs []LocalPlacementReference `json:"placementRefs"`
}

// LocalPlacementReference names a Placement in the ManifestWorkReplicaSet's namespace.
type LocalPlacementReference struct {
	// Name is the Placement's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// RolloutStrategy says how a template change reaches this placement's clusters. Omitted: All (every
	// cluster at once). A cluster newly decided gets the current template at once whatever the strategy.
	// +optional
	RolloutStrategy *ocmaddonv1alpha1.RolloutStrategy `json:"rolloutStrategy,omitempty"`
}

// ManifestWorkReplicaSetStatus is how the ManifestWorks and the rollouts stand.
type ManifestWorkReplicaSetStatus struct {
	// Conditions are PlacementVerified, PlacementRolledOut and ManifestworkApplied.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Summary counts the ManifestWorks of every placement.
	// +optional
	Summary ManifestWorkReplicaSetSummary `json:"summary,omitempty"`

	// PlacementsSummary counts them per placement.
	// +optional
	PlacementsSummary []PlacementSummary `json:"placementSummary,omitempty"`

	// PlacementRollouts keep each placement's rollout (target and stable revisions, each cluster's state), so
	// that a restarted hub goes on where it stopped. A Flotilla addition; OCM keeps no such state.
	// +optional
	PlacementRollouts []PlacementRollout `json:"placementRollouts,omitempty"`
}

// ManifestWorkReplicaSetSummary counts ManifestWorks by their conditions.
type ManifestWorkReplicaSetSummary struct {
	// Total is the number of ManifestWorks.
	Total int `json:"total"`
	// Applied counts those whose Applied condition is True.
	Applied int `json:"applied"`
	// Available counts those whose Available condition is True.
	Available int `json:"available"`
	// Degraded counts those whose Degraded condition is True.
	Degraded int `json:"degraded"`
	// Progressing counts those applied but not yet available.
	Progressing int `json:"progressing"`
}

// PlacementSummary counts one placement's ManifestWorks.
type PlacementSummary struct {
	// Name is the Placement's name.
	Name string `json:"name"`
	// AvailableDecisionGroups says how many of the placement's decision groups are on the current template,
	// as "N (M / T clusters applied)".
	// +optional
	AvailableDecisionGroups string `json:"availableDecisionGroups,omitempty"`
	// Summary counts the placement's ManifestWorks.
	Summary ManifestWorkReplicaSetSummary `json:"summary"`
}

// PlacementRollout is one placement's rollout state.
type PlacementRollout struct {
	// Name is the Placement's name.
	Name string `json:"name"`
	// Rollout is its state.
	Rollout workv1alpha1.RolloutStatus `json:"rollout"`
}

// ManifestWorkReplicaSetList is a list of ManifestWorkReplicaSets.
// +kubebuilder:object:root=true
type ManifestWorkReplicaSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ManifestWorkReplicaSet `json:"items"`
}
