package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// RolloutType says how a change of a template's rendered content reaches its clusters.
// +kubebuilder:validation:Enum=All;Progressive;ProgressivePerGroup
type RolloutType string

const (
	// RolloutAll updates every cluster at once (the default).
	RolloutAll RolloutType = "All"
	// RolloutProgressive updates the mandatory decision groups first, then the other clusters in order, at most
	// maxConcurrency at a time.
	RolloutProgressive RolloutType = "Progressive"
	// RolloutProgressivePerGroup updates one decision group at a time, the next only once the whole group
	// succeeded.
	RolloutProgressivePerGroup RolloutType = "ProgressivePerGroup"
)

// DefaultRevisionHistoryLimit is how many revisions of a template the hub keeps when the policy does not say.
const DefaultRevisionHistoryLimit = 10

// RolloutStrategy says how a change reaches the clusters a policy places a template on. The vocabulary is
// OCM's (ManifestWorkReplicaSet, Placement decision groups).
type RolloutStrategy struct {
	// Type is All (the default: every cluster at once), Progressive or ProgressivePerGroup.
	// +optional
	// +kubebuilder:default=All
	Type RolloutType `json:"type,omitempty"`

	// Progressive tunes a Progressive or ProgressivePerGroup rollout.
	// +optional
	Progressive *ProgressiveRollout `json:"progressive,omitempty"`

	// DecisionGroups and ClustersPerDecisionGroup group the placed clusters, as a Placement's decisionStrategy
	// does: first the named groups (each takes the clusters its selector matches and no earlier group took),
	// then the rest in groups of clustersPerDecisionGroup, by cluster name. A policy with a placementRef takes
	// the Placement's groups instead.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	DecisionGroups []clusterv1alpha1.DecisionGroup `json:"decisionGroups,omitempty"`

	// ClustersPerDecisionGroup is the size of the groups after the named ones: a count or a percentage of
	// the placed clusters. Omitted: one group for the rest.
	// +optional
	// +kubebuilder:validation:XIntOrString
	ClustersPerDecisionGroup *intstr.IntOrString `json:"clustersPerDecisionGroup,omitempty"`

	// RevisionHistoryLimit is how many revisions of the template the hub keeps (ControllerRevisions next to the
	// template) for `flotilla rollout history` and `undo`. Default 10.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`
}

// ProgressiveRollout tunes a progressive rollout.
type ProgressiveRollout struct {
	// MandatoryDecisionGroups are updated first, all of them, and every cluster in them must succeed before
	// any other cluster is updated. A group is named by groupName or by groupIndex.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	MandatoryDecisionGroups []MandatoryDecisionGroup `json:"mandatoryDecisionGroups,omitempty"`

	// MaxConcurrency is how many clusters are updated at once: a count or a percentage of the placed clusters
	// (rounded down, at least 1). Omitted: a whole decision group at a time (Progressive: every group).
	// +optional
	// +kubebuilder:validation:XIntOrString
	MaxConcurrency *intstr.IntOrString `json:"maxConcurrency,omitempty"`

	// MinSuccessTime is how long a cluster must stay healthy on the new revision to count as succeeded.
	// Default 0: succeeded as soon as it is healthy.
	// +optional
	MinSuccessTime metav1.Duration `json:"minSuccessTime,omitempty"`

	// ProgressDeadline is how long a cluster may take to become healthy on the new revision before it counts
	// as failed. Omitted: it may take as long as it needs (the rollout waits).
	// +optional
	ProgressDeadline *metav1.Duration `json:"progressDeadline,omitempty"`

	// MaxFailures is how many clusters may fail before the rollout stops: a count or a percentage of the
	// placed clusters (rounded down). Default 0: the first failure stops it.
	// +optional
	// +kubebuilder:validation:XIntOrString
	MaxFailures *intstr.IntOrString `json:"maxFailures,omitempty"`
}

// MandatoryDecisionGroup names a decision group that is updated first.
// +kubebuilder:validation:XValidation:rule="has(self.groupName) != has(self.groupIndex)",message="a mandatory decision group has exactly one of groupName and groupIndex"
type MandatoryDecisionGroup struct {
	// GroupName is the group's name.
	// +optional
	GroupName string `json:"groupName,omitempty"`

	// GroupIndex is the group's place in order, from 0.
	// +optional
	// +kubebuilder:validation:Minimum=0
	GroupIndex *int32 `json:"groupIndex,omitempty"`
}

// PlacementRef names a Placement in the policy's namespace whose decisions place the templates.
type PlacementRef struct {
	// Name of the Placement.
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}
