package v1beta1

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// Labels on a PlacementDecision, as OCM writes them: its Placement, and the index and name of its decision
// group.
const (
	LabelPlacement          = "cluster.open-cluster-management.io/placement"
	LabelDecisionGroupIndex = "cluster.open-cluster-management.io/decision-group-index"
	LabelDecisionGroupName  = "cluster.open-cluster-management.io/decision-group-name"
)

// OCM's cluster taints, which tolerations name; Flotilla's Clusters carry TaintClusterNotReady and
// TaintClusterUnreachable for the same conditions, and a toleration of OCM's key tolerates Flotilla's.
const (
	TaintClusterUnavailable = "cluster.open-cluster-management.io/unavailable"
	TaintClusterUnreachable = "cluster.open-cluster-management.io/unreachable"
)

// TaintEffect is an OCM taint's effect.
// +kubebuilder:validation:Enum=NoSelect;PreferNoSelect;NoSelectIfNew
type TaintEffect string

// OCM's taint effects, and what a toleration of each tolerates on a Flotilla Cluster.
const (
	// TaintEffectNoSelect: the Cluster is not picked, and leaves the decisions when the taint outlasts the
	// toleration; tolerates Flotilla's NoSchedule and NoExecute taints.
	TaintEffectNoSelect TaintEffect = "NoSelect"
	// TaintEffectPreferNoSelect: the Cluster is picked last; tolerates Flotilla's PreferNoSchedule taints,
	// which never keep a Cluster out.
	TaintEffectPreferNoSelect TaintEffect = "PreferNoSelect"
	// TaintEffectNoSelectIfNew: the Cluster is not newly picked; tolerates Flotilla's NoSchedule taints.
	TaintEffectNoSelectIfNew TaintEffect = "NoSelectIfNew"
)

// Placement picks Clusters from the ClusterSets bound to its namespace (ManagedClusterSetBindings, or
// Flotilla's ClusterSetBindings) and publishes them as PlacementDecisions labelled
// cluster.open-cluster-management.io/placement=<name>. It is mirrored onto the cluster.flotilla.io Placement
// of the same name and namespace, which decides; that Placement's status is copied back.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Succeeded",type=string,JSONPath=`.status.conditions[?(@.type=="PlacementSatisfied")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="PlacementSatisfied")].reason`
// +kubebuilder:printcolumn:name="SelectedClusters",type=integer,JSONPath=`.status.numberOfSelectedClusters`
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

// PlacementSpec says which Clusters a Placement picks; the fields are Flotilla's Placement's, except
// tolerations, which name OCM's taint effects. OCM's claimSelector, AddOn scores and spreadPolicy are not
// served.
type PlacementSpec struct {
	// ClusterSets are the sets to pick from; only those bound to the namespace count. Empty: every set bound
	// to the namespace.
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
	Predicates []clusterv1alpha1.ClusterPredicate `json:"predicates,omitempty"`

	// PrioritizerPolicy says how candidates are scored when not all of them are picked.
	// +optional
	PrioritizerPolicy clusterv1alpha1.PrioritizerPolicy `json:"prioritizerPolicy,omitempty"`

	// Tolerations let the Placement pick Clusters with taints that match them.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	Tolerations []Toleration `json:"tolerations,omitempty"`

	// DecisionStrategy splits the decisions into groups.
	// +optional
	DecisionStrategy clusterv1alpha1.DecisionStrategy `json:"decisionStrategy,omitempty"`
}

// Toleration tolerates the taints it matches: by key (empty with operator Exists: every key), value and
// effect (empty: every effect).
type Toleration struct {
	// Key is the taint key; OCM's unavailable and unreachable keys match Flotilla's not-ready and unreachable
	// taints.
	// +optional
	Key string `json:"key,omitempty"`

	// Operator is Equal (the default: the value must match) or Exists (any value).
	// +optional
	// +kubebuilder:default=Equal
	// +kubebuilder:validation:Enum=Equal;Exists
	Operator string `json:"operator,omitempty"`

	// Value is the taint value to match with Equal.
	// +optional
	Value string `json:"value,omitempty"`

	// Effect is the taint effect to match; empty: every effect.
	// +optional
	Effect TaintEffect `json:"effect,omitempty"`

	// TolerationSeconds is how long after the taint was added it is tolerated; omitted: for ever.
	// +optional
	TolerationSeconds *int64 `json:"tolerationSeconds,omitempty"`
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

	// ClustersCount counts the group's Clusters.
	// +optional
	ClustersCount int32 `json:"clustersCount"`
}

// PlacementList is a list of Placements.
// +kubebuilder:object:root=true
type PlacementList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Placement `json:"items"`
}

// PlacementDecision holds up to 100 of a Placement's decided Clusters, of one decision group. The hub writes
// it from the cluster.flotilla.io PlacementDecision of the same name, owned by its Placement and labelled
// cluster.open-cluster-management.io/placement, decision-group-index and decision-group-name; a write by
// anyone else is put back.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced
// +kubebuilder:subresource:status
type PlacementDecision struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Status holds the decisions.
	// +optional
	Status clusterv1alpha1.PlacementDecisionStatus `json:"status,omitempty"`
}

// PlacementDecisionList is a list of PlacementDecisions.
// +kubebuilder:object:root=true
type PlacementDecisionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PlacementDecision `json:"items"`
}

// flotillaTaintKeys are OCM's cluster taints and the Flotilla taints set for the same condition.
var flotillaTaintKeys = map[string]string{
	TaintClusterUnavailable: clusterv1alpha1.TaintClusterNotReady,
	TaintClusterUnreachable: clusterv1alpha1.TaintClusterUnreachable,
}

// flotillaTaintEffects are the Flotilla taint effects a toleration of an OCM effect tolerates: NoSelect keeps
// a Cluster out and drops it from the decisions, as Flotilla's NoSchedule and NoExecute together do (the
// empty effect matches both); NoSelectIfNew only keeps it out of new decisions, the nearest being
// NoSchedule; PreferNoSelect never keeps a Cluster out, as PreferNoSchedule.
var flotillaTaintEffects = map[TaintEffect]corev1.TaintEffect{
	"":                        "",
	TaintEffectNoSelect:       "",
	TaintEffectNoSelectIfNew:  corev1.TaintEffectNoSchedule,
	TaintEffectPreferNoSelect: corev1.TaintEffectPreferNoSchedule,
}

// Flotilla is the spec of the cluster.flotilla.io Placement this one is mirrored onto: the same fields, with
// each toleration of OCM's taints and effects made one of Flotilla's.
func (s *PlacementSpec) Flotilla() (*clusterv1alpha1.PlacementSpec, error) {
	out := &clusterv1alpha1.PlacementSpec{
		ClusterSets:       s.ClusterSets,
		NumberOfClusters:  s.NumberOfClusters,
		Predicates:        s.Predicates,
		PrioritizerPolicy: s.PrioritizerPolicy,
		DecisionStrategy:  s.DecisionStrategy,
	}
	for i, t := range s.Tolerations {
		effect, ok := flotillaTaintEffects[t.Effect]
		if !ok {
			return nil, fmt.Errorf("spec.tolerations[%d].effect: %q is not an OCM taint effect", i, t.Effect)
		}
		key := t.Key
		if flotilla, ok := flotillaTaintKeys[key]; ok {
			key = flotilla
		}
		out.Tolerations = append(out.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOperator(t.Operator),
			Value: t.Value, Effect: effect, TolerationSeconds: t.TolerationSeconds})
	}
	return out, nil
}
