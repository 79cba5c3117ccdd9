package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Labels on a PlacementDecision: the Placement it belongs to, and the index and name of its decision group.
const (
	LabelPlacement          = "cluster.flotilla.io/placement"
	LabelDecisionGroupIndex = "cluster.flotilla.io/decision-group-index"
	LabelDecisionGroupName  = "cluster.flotilla.io/decision-group-name"
)

// MaxDecisionsPerObject bounds the decisions one PlacementDecision holds.
const MaxDecisionsPerObject = 100

// Conditions of a Placement.
const (
	// PlacementConditionSatisfied is True when numberOfClusters clusters (or, without it, at least one) were
	// decided.
	PlacementConditionSatisfied = "PlacementSatisfied"
	// PlacementConditionMisconfigured is True while the Placement cannot be evaluated as written.
	PlacementConditionMisconfigured = "PlacementMisconfigured"
)

// Placement picks Clusters from the ClusterSets bound to its namespace, by label predicates, taints and
// scores, and writes the result to PlacementDecisions for tools that read them (for example Argo CD's
// clusterDecisionResource generator). Its fields are Open Cluster Management's Placement's.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=fpl,categories=flotilla
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Succeeded",type=string,JSONPath=`.status.conditions[?(@.type=="PlacementSatisfied")].status`
// +kubebuilder:printcolumn:name="Selected",type=integer,JSONPath=`.status.numberOfSelectedClusters`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Placement struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says which Clusters to pick.
	// +optional
	Spec PlacementSpec `json:"spec,omitempty"`

	// Status is what the hub last decided.
	// +optional
	Status PlacementStatus `json:"status,omitempty"`
}

// PlacementSpec says which Clusters a Placement picks.
type PlacementSpec struct {
	// ClusterSets are the ClusterSets to pick from; only those bound to the namespace count. Empty: every set
	// bound to the namespace.
	// +optional
	// +listType=set
	ClusterSets []string `json:"clusterSets,omitempty"`

	// NumberOfClusters is how many Clusters to pick, the best scored first. Omitted: every Cluster that fits.
	// +optional
	// +kubebuilder:validation:Minimum=0
	NumberOfClusters *int32 `json:"numberOfClusters,omitempty"`

	// Predicates filter the candidates: a Cluster fits when any predicate selects it. Empty: every candidate.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	Predicates []ClusterPredicate `json:"predicates,omitempty"`

	// PrioritizerPolicy says how candidates are scored when not all of them are picked.
	// +optional
	PrioritizerPolicy PrioritizerPolicy `json:"prioritizerPolicy,omitempty"`

	// Tolerations let the Placement pick Clusters with NoSchedule or NoExecute taints that match them.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// DecisionStrategy splits the decisions into groups.
	// +optional
	DecisionStrategy DecisionStrategy `json:"decisionStrategy,omitempty"`
}

// ClusterPredicate selects Clusters.
type ClusterPredicate struct {
	// RequiredClusterSelector is what a Cluster must match.
	// +optional
	RequiredClusterSelector ClusterSelector `json:"requiredClusterSelector,omitempty"`
}

// ClusterSelector selects Clusters by their labels and by CEL expressions; a Cluster must match both. OCM's claimSelector is not offered: Flotilla has no ClusterClaims.
type ClusterSelector struct {
	// LabelSelector selects Clusters by label; empty selects every Cluster.
	// +optional
	LabelSelector metav1.LabelSelector `json:"labelSelector,omitempty"`

	// CelSelector selects Clusters by CEL expressions over the Cluster.
	// +optional
	CelSelector CelSelector `json:"celSelector,omitempty"`
}

// CelSelector selects the Clusters for which every expression is true.
type CelSelector struct {
	// CelExpressions are CEL expressions over the variable cluster (the Cluster as a map: metadata, spec,
	// status) that must all return true, for example
	// `cluster.metadata.labels["env"] == "prod"` or
	// `quantity(cluster.status.resourceSummary.allocatable.cpu).compareTo(quantity("8")) >= 0`.
	// An expression that fails on a Cluster (a missing field, its cost limit) does not select it.
	// Empty: every Cluster.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=1024
	CelExpressions []string `json:"celExpressions,omitempty"`
}

// PrioritizerPolicyMode says how the configured scores combine with the defaults.
// +kubebuilder:validation:Enum=Additive;Exact
type PrioritizerPolicyMode string

const (
	// PrioritizerPolicyAdditive adds the configurations to the defaults (Balance and Steady, weight 1).
	PrioritizerPolicyAdditive PrioritizerPolicyMode = "Additive"
	// PrioritizerPolicyExact uses only the configurations.
	PrioritizerPolicyExact PrioritizerPolicyMode = "Exact"
)

// The built-in scores.
const (
	ScoreBalance                   = "Balance"
	ScoreSteady                    = "Steady"
	ScoreResourceAllocatableCPU    = "ResourceAllocatableCPU"
	ScoreResourceAllocatableMemory = "ResourceAllocatableMemory"
)

// PrioritizerPolicy says how candidates are scored.
type PrioritizerPolicy struct {
	// Mode is Additive (the default: the configurations on top of Balance and Steady at weight 1) or Exact
	// (only the configurations).
	// +optional
	// +kubebuilder:default=Additive
	Mode PrioritizerPolicyMode `json:"mode,omitempty"`

	// Configurations are the weighted scores.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	Configurations []PrioritizerConfig `json:"configurations,omitempty"`
}

// PrioritizerConfig is one weighted score.
type PrioritizerConfig struct {
	// ScoreCoordinate names the score.
	// +required
	ScoreCoordinate ScoreCoordinate `json:"scoreCoordinate"`

	// Weight multiplies the score, -10 to 10; 0 turns it off.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=-10
	// +kubebuilder:validation:Maximum=10
	Weight int32 `json:"weight,omitempty"`
}

// ScoreCoordinate names a score.
// +kubebuilder:validation:XValidation:rule="self.type != 'BuiltIn' || has(self.builtIn)",message="scoreCoordinate of type BuiltIn needs builtIn"
type ScoreCoordinate struct {
	// Type is BuiltIn; OCM's AddOn scores are not offered.
	// +optional
	// +kubebuilder:default=BuiltIn
	// +kubebuilder:validation:Enum=BuiltIn
	Type string `json:"type,omitempty"`

	// BuiltIn is Balance (fewer Placements deciding the Cluster scores higher), Steady (the Clusters already
	// decided score higher), ResourceAllocatableCPU or ResourceAllocatableMemory (more allocatable scores
	// higher).
	// +optional
	// +kubebuilder:validation:Enum=Balance;Steady;ResourceAllocatableCPU;ResourceAllocatableMemory
	BuiltIn string `json:"builtIn,omitempty"`
}

// DecisionStrategy splits a Placement's decisions into groups.
type DecisionStrategy struct {
	// GroupStrategy says how.
	// +optional
	GroupStrategy GroupStrategy `json:"groupStrategy,omitempty"`
}

// GroupStrategy says how decisions are grouped: first into the named decisionGroups, each taking the
// decided Clusters its selector matches and no earlier group took, then the rest into groups of
// clustersPerDecisionGroup.
type GroupStrategy struct {
	// DecisionGroups are the named groups.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	DecisionGroups []DecisionGroup `json:"decisionGroups,omitempty"`

	// ClustersPerDecisionGroup is the size of the other groups: a count (at least 1) or a percentage of the
	// decided Clusters ("25%", rounded up, at least 1). Omitted: one group for the rest.
	// +optional
	// +kubebuilder:validation:XIntOrString
	ClustersPerDecisionGroup *intstr.IntOrString `json:"clustersPerDecisionGroup,omitempty"`
}

// DecisionGroup is a named group of decisions.
type DecisionGroup struct {
	// GroupName names the group; it is the decision-group-name label of its PlacementDecisions.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`
	GroupName string `json:"groupName"`

	// GroupClusterSelector picks the group's Clusters among the decided ones.
	// +optional
	GroupClusterSelector GroupClusterSelector `json:"groupClusterSelector,omitempty"`
}

// GroupClusterSelector picks a decision group's Clusters by their labels (CEL expressions are for
// predicates only).
type GroupClusterSelector struct {
	// LabelSelector selects Clusters by label; empty selects every Cluster.
	// +optional
	LabelSelector metav1.LabelSelector `json:"labelSelector,omitempty"`
}

// PlacementStatus is what the hub last decided for a Placement.
type PlacementStatus struct {
	// NumberOfSelectedClusters counts the decided Clusters.
	// +optional
	NumberOfSelectedClusters int32 `json:"numberOfSelectedClusters,omitempty"`

	// DecisionGroups lists the decision groups, in order.
	// +optional
	DecisionGroups []DecisionGroupStatus `json:"decisionGroups,omitempty"`

	// Conditions: PlacementSatisfied, PlacementMisconfigured.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// DecisionGroupStatus is one decision group.
type DecisionGroupStatus struct {
	// DecisionGroupIndex is the group's place in order, from 0.
	// +optional
	DecisionGroupIndex int32 `json:"decisionGroupIndex"`

	// DecisionGroupName is the group's name; empty for a group of clustersPerDecisionGroup.
	// +optional
	DecisionGroupName string `json:"decisionGroupName,omitempty"`

	// Decisions are the names of the group's PlacementDecisions.
	// +optional
	Decisions []string `json:"decisions,omitempty"`

	// ClusterCount counts the group's Clusters.
	// +optional
	ClusterCount int32 `json:"clusterCount"`
}

// PlacementList is a list of Placements.
// +kubebuilder:object:root=true
type PlacementList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Placement `json:"items"`
}

// PlacementDecision holds up to 100 of a Placement's decided Clusters, of one decision group. It is written
// by the hub, owned by its Placement, and labelled cluster.flotilla.io/placement=<placement>,
// cluster.flotilla.io/decision-group-index and cluster.flotilla.io/decision-group-name.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=fpd,categories=flotilla
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Placement",type=string,JSONPath=`.metadata.labels.cluster\.flotilla\.io/placement`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PlacementDecision struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Status holds the decisions.
	// +optional
	Status PlacementDecisionStatus `json:"status,omitempty"`
}

// PlacementDecisionStatus holds a PlacementDecision's decisions.
type PlacementDecisionStatus struct {
	// Decisions are the decided Clusters, at most 100.
	// +optional
	// +kubebuilder:validation:MaxItems=100
	Decisions []ClusterDecision `json:"decisions,omitempty"`
}

// ClusterDecision is one decided Cluster.
type ClusterDecision struct {
	// ClusterName is the Cluster's name.
	// +required
	ClusterName string `json:"clusterName"`

	// Reason says why it was decided; may be empty.
	// +optional
	Reason string `json:"reason"`
}

// PlacementDecisionList is a list of PlacementDecisions.
// +kubebuilder:object:root=true
type PlacementDecisionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PlacementDecision `json:"items"`
}
