package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Placement says which clusters receive a template and how its replicas are divided.
// +kubebuilder:validation:XValidation:rule="!(has(self.clusterAffinity) && has(self.clusterAffinities))",message="placement.clusterAffinity and placement.clusterAffinities are mutually exclusive"
type Placement struct {
	// ClusterAffinity restricts the candidate clusters. Omitted: every cluster. Mutually exclusive with
	// clusterAffinities.
	// +optional
	ClusterAffinity *ClusterAffinity `json:"clusterAffinity,omitempty"`

	// ClusterAffinities are ordered groups of candidate clusters: the scheduler uses the first group that can
	// host the template and falls through to the next when it cannot. Mutually exclusive with clusterAffinity.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.all(a, self.exists_one(b, b.affinityName == a.affinityName))",message="clusterAffinities[].affinityName must be unique"
	ClusterAffinities []ClusterAffinityTerm `json:"clusterAffinities,omitempty"`

	// ClusterTolerations let the template go to clusters with matching taints.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	ClusterTolerations []corev1.Toleration `json:"clusterTolerations,omitempty"`

	// SpreadConstraints spread the template over groups of clusters (by cluster, region, zone, provider or
	// a label). A spread by region, zone or provider needs a spread by cluster too; each field appears once,
	// and there is at most one spread by region, zone, provider or label.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self.all(c, !has(c.spreadByField) || self.exists_one(d, has(d.spreadByField) && d.spreadByField == c.spreadByField))",message="spreadConstraints: each spreadByField may appear only once"
	// +kubebuilder:validation:XValidation:rule="self.filter(c, !has(c.spreadByLabel) && (!has(c.spreadByField) || c.spreadByField == 'cluster')).size() <= 1",message="spreadConstraints: at most one spread by cluster (spreadByField cluster, or neither spreadByField nor spreadByLabel)"
	// +kubebuilder:validation:XValidation:rule="!self.exists(c, has(c.spreadByField) && c.spreadByField != 'cluster') || self.exists(c, !has(c.spreadByLabel) && (!has(c.spreadByField) || c.spreadByField == 'cluster'))",message="spreadConstraints: a spread by region, zone or provider requires a spread by cluster too"
	// +kubebuilder:validation:XValidation:rule="self.filter(c, has(c.spreadByLabel) || (has(c.spreadByField) && c.spreadByField != 'cluster')).size() <= 1",message="spreadConstraints: at most one spread by region, zone, provider or label (beside the spread by cluster)"
	SpreadConstraints []SpreadConstraint `json:"spreadConstraints,omitempty"`

	// ReplicaScheduling says how replicas are divided. Omitted: every cluster runs all replicas (Duplicated).
	// +optional
	ReplicaScheduling *ReplicaSchedulingStrategy `json:"replicaScheduling,omitempty"`
}

// ClusterAffinity selects candidate clusters. A cluster qualifies when it matches every non-empty part and is
// not in exclude.
type ClusterAffinity struct {
	// LabelSelector selects clusters by their labels.
	// +optional
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`

	// FieldSelector selects clusters by spec.provider, spec.region or spec.zones.
	// +optional
	FieldSelector *FieldSelector `json:"fieldSelector,omitempty"`

	// ClusterNames lists the clusters that qualify by name.
	// +optional
	// +kubebuilder:validation:MaxItems=1000
	ClusterNames []string `json:"clusterNames,omitempty"`

	// ExcludeClusters lists clusters that never qualify.
	// +optional
	// +kubebuilder:validation:MaxItems=1000
	ExcludeClusters []string `json:"exclude,omitempty"`
}

// FieldSelector selects clusters by provider, region or zone.
type FieldSelector struct {
	// MatchExpressions are ANDed. Keys: provider, region, zone. Operators: In, NotIn.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.all(e, e.key in ['provider', 'region', 'zone'])",message="fieldSelector keys must be provider, region or zone"
	// +kubebuilder:validation:XValidation:rule="self.all(e, e.operator in ['In', 'NotIn'])",message="fieldSelector operators must be In or NotIn"
	MatchExpressions []corev1.NodeSelectorRequirement `json:"matchExpressions,omitempty"`
}

// ClusterAffinityTerm is a named group of candidate clusters in clusterAffinities.
type ClusterAffinityTerm struct {
	// AffinityName names the group; status records which group is in use.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	AffinityName string `json:"affinityName"`

	ClusterAffinity `json:",inline"`
}

// SpreadFieldValue is a cluster field to spread over.
// +kubebuilder:validation:Enum=cluster;region;zone;provider
type SpreadFieldValue string

const (
	SpreadByFieldCluster  SpreadFieldValue = "cluster"
	SpreadByFieldRegion   SpreadFieldValue = "region"
	SpreadByFieldZone     SpreadFieldValue = "zone"
	SpreadByFieldProvider SpreadFieldValue = "provider"
)

// SpreadConstraint spreads a template over between minGroups and maxGroups groups of clusters, grouped by one
// field or one label. spreadByField and spreadByLabel are mutually exclusive; with neither, as in Karmada,
// the constraint spreads by cluster.
// +kubebuilder:validation:XValidation:rule="!(has(self.spreadByField) && has(self.spreadByLabel))",message="spreadByField and spreadByLabel are mutually exclusive"
// +kubebuilder:validation:XValidation:rule="!has(self.maxGroups) || !has(self.minGroups) || self.maxGroups >= self.minGroups",message="maxGroups must be greater than or equal to minGroups"
type SpreadConstraint struct {
	// SpreadByField groups clusters by cluster, region, zone or provider. Omitted (and no spreadByLabel):
	// cluster.
	// +optional
	SpreadByField SpreadFieldValue `json:"spreadByField,omitempty"`

	// SpreadByLabel groups clusters by the value of this label.
	// +optional
	// +kubebuilder:validation:MaxLength=317
	SpreadByLabel string `json:"spreadByLabel,omitempty"`

	// MaxGroups is the most groups to use. Omitted: no limit.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxGroups int `json:"maxGroups,omitempty"`

	// MinGroups is the fewest groups to use; fewer makes scheduling fail. Omitted: 0.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MinGroups int `json:"minGroups,omitempty"`
}

// ReplicaSchedulingType says whether every cluster runs all replicas or they are divided.
// +kubebuilder:validation:Enum=Duplicated;Divided
type ReplicaSchedulingType string

const (
	// ReplicaSchedulingDuplicated: every selected cluster runs the full replica count.
	ReplicaSchedulingDuplicated ReplicaSchedulingType = "Duplicated"
	// ReplicaSchedulingDivided: the replica count is divided among the selected clusters.
	ReplicaSchedulingDivided ReplicaSchedulingType = "Divided"
)

// ReplicaDivisionPreference says how Divided replicas are shared.
// +kubebuilder:validation:Enum=Aggregated;Weighted
type ReplicaDivisionPreference string

const (
	// ReplicaDivisionAggregated packs the replicas into as few clusters as fit them.
	ReplicaDivisionAggregated ReplicaDivisionPreference = "Aggregated"
	// ReplicaDivisionWeighted shares the replicas by weight.
	ReplicaDivisionWeighted ReplicaDivisionPreference = "Weighted"
)

// ReplicaSchedulingStrategy says how replicas are divided among the selected clusters.
// +kubebuilder:validation:XValidation:rule="!has(self.weightPreference) || self.replicaSchedulingType == 'Divided'",message="weightPreference is allowed only when replicaSchedulingType is Divided"
// +kubebuilder:validation:XValidation:rule="!has(self.descheduleAfter) || (self.replicaSchedulingType == 'Divided' && ((has(self.replicaDivisionPreference) && self.replicaDivisionPreference == 'Aggregated') || (has(self.weightPreference) && has(self.weightPreference.dynamicWeight) && self.weightPreference.dynamicWeight == 'AvailableReplicas')))",message="descheduleAfter applies only to replicas divided by capacity: Divided with replicaDivisionPreference Aggregated or dynamicWeight AvailableReplicas"
type ReplicaSchedulingStrategy struct {
	// ReplicaSchedulingType is Duplicated or Divided. Default Divided (as in Karmada, when replicaScheduling
	// is present without a type).
	// +optional
	// +kubebuilder:default=Divided
	ReplicaSchedulingType ReplicaSchedulingType `json:"replicaSchedulingType,omitempty"`

	// ReplicaDivisionPreference is Aggregated or Weighted, for Divided. Omitted: Weighted with equal weights.
	// +optional
	ReplicaDivisionPreference ReplicaDivisionPreference `json:"replicaDivisionPreference,omitempty"`

	// WeightPreference gives the weights for Weighted division. Omitted: equal weights.
	// +optional
	WeightPreference *ClusterPreferences `json:"weightPreference,omitempty"`

	// DescheduleAfter is how long replicas may stay unschedulable in a cluster (Pending, the member's
	// scheduler finding no node) before they move to clusters with room; "0s" never moves them. Only for
	// replicas divided by capacity (Aggregated, or dynamicWeight AvailableReplicas): static weights and
	// Duplicated placements are never descheduled. Omitted: the hub's --deschedule-after (5 minutes).
	// +optional
	DescheduleAfter *metav1.Duration `json:"descheduleAfter,omitempty"`
}

// DynamicWeightFactor is where dynamic weights come from.
// +kubebuilder:validation:Enum=AvailableReplicas
type DynamicWeightFactor string

// DynamicWeightByAvailableReplicas weighs each cluster by how many replicas it can still fit.
const DynamicWeightByAvailableReplicas DynamicWeightFactor = "AvailableReplicas"

// ClusterPreferences gives weights for Weighted division: a static list or a dynamic factor. When both are
// given the dynamic factor wins and the static list is not used, as in Karmada.
type ClusterPreferences struct {
	// StaticWeightList gives fixed weights to the clusters each entry selects. Not used when dynamicWeight is
	// set.
	// +optional
	// +kubebuilder:validation:MaxItems=1000
	StaticWeightList []StaticClusterWeight `json:"staticWeightList,omitempty"`

	// DynamicWeight weighs each cluster by a measured factor.
	// +optional
	DynamicWeight DynamicWeightFactor `json:"dynamicWeight,omitempty"`
}

// MaxStaticWeight is the largest static weight admission accepts (the Maximum of StaticClusterWeight.Weight),
// the largest int32. A replica count is an int32 too, so a count times a weight stays below 2^62, and the
// weights of 2^32 clusters together below 2^63: the scheduler divides with int64 arithmetic that cannot
// overflow. Karmada leaves the weight unbounded; ratios need nowhere near this range.
const MaxStaticWeight = 1<<31 - 1

// StaticClusterWeight gives one weight to the clusters that targetCluster selects.
type StaticClusterWeight struct {
	// TargetCluster selects the clusters that get this weight.
	// +required
	TargetCluster ClusterAffinity `json:"targetCluster"`

	// Weight is the share of replicas, relative to the other weights. At least 1, at most 2147483647
	// (MaxStaticWeight).
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2147483647
	Weight int64 `json:"weight"`
}
