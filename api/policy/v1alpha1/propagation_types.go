package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PropagationPolicy places the namespaced templates of its own namespace that its resourceSelectors match onto
// member clusters. Field names and meanings follow Karmada's policy.karmada.io/v1alpha1 PropagationPolicy.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=pp,categories=flotilla
// +kubebuilder:printcolumn:name="Priority",type=integer,JSONPath=`.spec.priority`
// +kubebuilder:printcolumn:name="Conflict-Resolution",type=string,JSONPath=`.spec.conflictResolution`,priority=1
// +kubebuilder:printcolumn:name="Claimed",type=integer,JSONPath=`.status.claimedTemplates`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:subresource:status
type PropagationPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says which templates go where.
	Spec PropagationSpec `json:"spec"`

	// Status says which templates the policy claims and whether it can be honoured; the detector writes it.
	// +optional
	Status PropagationPolicyStatus `json:"status,omitempty"`
}

// ClusterPropagationPolicy is a PropagationPolicy for cluster-scoped templates and for namespaced templates of
// every namespace. As in Karmada, a PropagationPolicy in the template's namespace that selects a template wins
// over every ClusterPropagationPolicy whatever their priorities, and a ClusterPropagationPolicy never preempts
// a PropagationPolicy; among ClusterPropagationPolicies the highest priority wins, then the most precise
// selector, then the name.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=cpp,categories=flotilla
// +kubebuilder:printcolumn:name="Priority",type=integer,JSONPath=`.spec.priority`
// +kubebuilder:printcolumn:name="Conflict-Resolution",type=string,JSONPath=`.spec.conflictResolution`,priority=1
// +kubebuilder:printcolumn:name="Claimed",type=integer,JSONPath=`.status.claimedTemplates`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:subresource:status
type ClusterPropagationPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says which templates go where.
	Spec PropagationSpec `json:"spec"`

	// Status says which templates the policy claims and whether it can be honoured; the detector writes it.
	// +optional
	Status PropagationPolicyStatus `json:"status,omitempty"`
}

// PreemptionPolicy says whether a policy may take templates already claimed by a lower-priority policy.
// +kubebuilder:validation:Enum=Always;Never
type PreemptionPolicy string

const (
	// PreemptAlways lets this policy take templates claimed by policies of lower priority.
	PreemptAlways PreemptionPolicy = "Always"
	// PreemptNever leaves claimed templates with their policy.
	PreemptNever PreemptionPolicy = "Never"
)

// ConflictResolution says what to do when a member already has an object Flotilla did not create.
// +kubebuilder:validation:Enum=Abort;Overwrite
type ConflictResolution string

const (
	// ConflictAbort leaves the existing object alone and reports the conflict on the Work.
	ConflictAbort ConflictResolution = "Abort"
	// ConflictOverwrite adopts the existing object: Flotilla applies over it and manages it from then on.
	ConflictOverwrite ConflictResolution = "Overwrite"
)

// ActivationPreference says when policy changes reach the templates it already placed.
// +kubebuilder:validation:Enum=Lazy
type ActivationPreference string

// LazyActivation applies policy changes to a template only when the template itself next changes.
const LazyActivation ActivationPreference = "Lazy"

// PropagationSpec says which templates a policy selects and how they are placed.
type PropagationSpec struct {
	// ResourceSelectors select the templates this policy places. A template matches when any selector does.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	ResourceSelectors []ResourceSelector `json:"resourceSelectors"`

	// PropagateDeps makes the ConfigMaps, Secrets, ServiceAccounts and PVCs a workload refers to follow it to
	// the same clusters. Default false.
	// +optional
	PropagateDeps bool `json:"propagateDeps,omitempty"`

	// Placement says which clusters receive the templates and how replicas are divided among them.
	// +optional
	Placement Placement `json:"placement,omitempty"`

	// PlacementRef places the templates on the decisions of a Placement (cluster.flotilla.io) in the policy's
	// namespace instead of by placement; a rollout then uses the Placement's decision groups. Only for a
	// PropagationPolicy, and not together with placement.
	// +optional
	PlacementRef *PlacementRef `json:"placementRef,omitempty"`

	// Rollout says how a change of a template (or of its overrides) reaches the clusters: all at once (the
	// default) or in waves that stop when a cluster does not become healthy.
	// +optional
	Rollout *RolloutStrategy `json:"rollout,omitempty"`

	// Priority decides between policies of the same kind that select the same template: higher wins (a
	// PropagationPolicy wins over any ClusterPropagationPolicy first). Ties go to the more precise selector
	// (name, then labelSelector, then kind only), then to the policy name in alphabetical order. Default 0.
	// +optional
	// +kubebuilder:default=0
	Priority *int32 `json:"priority,omitempty"`

	// Preemption says whether this policy takes templates already claimed by a lower-priority policy of
	// the same kind, or (a PropagationPolicy) by any ClusterPropagationPolicy. Default Never.
	// +optional
	// +kubebuilder:default=Never
	Preemption PreemptionPolicy `json:"preemption,omitempty"`

	// DependentOverrides names override policies that must exist before the templates are claimed, so no
	// cluster ever sees a template without its overrides: OverridePolicies of its namespace for a
	// PropagationPolicy, ClusterOverridePolicies for a ClusterPropagationPolicy. While one is missing the
	// templates wait (a template already placed keeps its binding as it is) and the policy's Honoured
	// condition names the missing ones.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	DependentOverrides []string `json:"dependentOverrides,omitempty"`

	// SchedulerName is the scheduler that places the templates. Default "default-scheduler", Flotilla's own;
	// the bindings of a policy naming another scheduler are left to it (Flotilla does not place them).
	// +optional
	// +kubebuilder:default="default-scheduler"
	SchedulerName string `json:"schedulerName,omitempty"`

	// Failover says how the templates move when a cluster or the application in it fails. Omitted (and
	// unlike Karmada, where cluster failover needs this field): the templates still leave a cluster that stays
	// unreachable or not ready for the hub's --default-failover-toleration (default 5 minutes, as pods leave
	// a node), the old copy removed Gracefully, unless the placement tolerates the cluster's health taints
	// itself; application failover is off.
	// +optional
	Failover *FailoverBehavior `json:"failover,omitempty"`

	// ConflictResolution says what happens when a member already has an object of the same name that
	// Flotilla did not create: Abort (default) leaves it alone and reports the conflict; Overwrite adopts it.
	// +optional
	// +kubebuilder:default=Abort
	ConflictResolution ConflictResolution `json:"conflictResolution,omitempty"`

	// ActivationPreference Lazy makes policy changes reach a template only when the template next changes
	// (its binding keeps what the policy said when the template last changed). Omitted: changes apply at
	// once. Either way a template the policy stops selecting is released at once, and the switch to Lazy
	// itself reaches the templates at once.
	// +optional
	ActivationPreference ActivationPreference `json:"activationPreference,omitempty"`

	// Suspension pauses dispatching of the templates' Works to all or some clusters.
	// +optional
	Suspension *Suspension `json:"suspension,omitempty"`

	// PreserveResourcesOnDeletion keeps the member objects when their template is deleted on the hub.
	// Default false.
	// +optional
	PreserveResourcesOnDeletion *bool `json:"preserveResourcesOnDeletion,omitempty"`

	// SchedulePriority orders the templates in the scheduling queue: when many wait to be placed, those of
	// higher priority go first. Omitted: priority 0, in arrival order among equals.
	// +optional
	SchedulePriority *SchedulePriority `json:"schedulePriority,omitempty"`
}

// ResourceSelector selects templates by apiVersion and kind, and optionally by namespace, name or labels.
// When name is set, labelSelector is ignored.
type ResourceSelector struct {
	// APIVersion of the templates, for example apps/v1.
	// +required
	// +kubebuilder:validation:MinLength=1
	APIVersion string `json:"apiVersion"`

	// Kind of the templates, for example Deployment.
	// +required
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`

	// Namespace of the templates. Empty selects every namespace (a PropagationPolicy selects only its own).
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Name of the template. Empty selects every name.
	// +optional
	Name string `json:"name,omitempty"`

	// LabelSelector selects templates by their labels. Ignored when name is set.
	// +optional
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
}

// Suspension pauses the dispatching of Works. dispatching and dispatchingOnClusters are mutually exclusive.
// +kubebuilder:validation:XValidation:rule="!(has(self.dispatching) && has(self.dispatchingOnClusters))",message="suspension.dispatching and suspension.dispatchingOnClusters are mutually exclusive"
type Suspension struct {
	// Dispatching true pauses dispatching to every cluster.
	// +optional
	Dispatching *bool `json:"dispatching,omitempty"`

	// DispatchingOnClusters pauses dispatching to the named clusters only.
	// +optional
	DispatchingOnClusters *SuspendClusters `json:"dispatchingOnClusters,omitempty"`
}

// SuspendClusters names the clusters whose dispatching is paused.
type SuspendClusters struct {
	// ClusterNames are the paused clusters.
	// +optional
	// +kubebuilder:validation:MaxItems=1000
	ClusterNames []string `json:"clusterNames,omitempty"`
}

// SchedulePriority takes a template's place in the scheduling queue from a Kubernetes PriorityClass.
type SchedulePriority struct {
	// PriorityClassSource is where the priority class comes from. Only KubePriorityClass is supported.
	// +required
	// +kubebuilder:validation:Enum=KubePriorityClass
	PriorityClassSource string `json:"priorityClassSource"`

	// PriorityClassName is the name of a scheduling.k8s.io PriorityClass on the hub, whose value is the
	// templates' priority. While it does not exist they are scheduled at priority 0 and the policy's
	// Honoured condition names it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	PriorityClassName string `json:"priorityClassName"`
}

// FailoverBehavior says how templates move when a cluster or the application in it fails.
type FailoverBehavior struct {
	// Application moves the templates away from a cluster where the application stays unhealthy.
	// +optional
	Application *ApplicationFailoverBehavior `json:"application,omitempty"`

	// Cluster says what happens to the copy on a cluster that fails over.
	// +optional
	Cluster *ClusterFailoverBehavior `json:"cluster,omitempty"`
}

// PurgeMode says when the copy on the cluster being left is removed. Immediately and Graciously, the names
// older Karmada releases use, are accepted as synonyms of Directly and Gracefully (admission warns); code
// reads a purge mode through Canonical.
// +kubebuilder:validation:Enum=Directly;Gracefully;Never;Immediately;Graciously
type PurgeMode string

const (
	// PurgeDirectly removes the old copy as soon as the binding moves.
	PurgeDirectly PurgeMode = "Directly"
	// PurgeGracefully removes the old copy once the replacement is healthy or gracePeriodSeconds pass.
	PurgeGracefully PurgeMode = "Gracefully"
	// PurgeNever keeps the old copy; a person removes it.
	PurgeNever PurgeMode = "Never"
	// PurgeImmediately is the older name of PurgeDirectly.
	PurgeImmediately PurgeMode = "Immediately"
	// PurgeGraciously is the older name of PurgeGracefully.
	PurgeGraciously PurgeMode = "Graciously"
)

// Canonical returns the purge mode under its current name: Directly for Immediately, Gracefully for
// Graciously, any other mode unchanged.
func (m PurgeMode) Canonical() PurgeMode {
	switch m {
	case PurgeImmediately:
		return PurgeDirectly
	case PurgeGraciously:
		return PurgeGracefully
	}
	return m
}

// ApplicationFailoverBehavior moves a template away from a cluster where its application is unhealthy.
// +kubebuilder:validation:XValidation:rule="!has(self.gracePeriodSeconds) || self.purgeMode in ['Gracefully', 'Graciously']",message="gracePeriodSeconds is allowed only when purgeMode is Gracefully"
type ApplicationFailoverBehavior struct {
	// DecisionConditions say when the application counts as failed.
	// +required
	DecisionConditions DecisionConditions `json:"decisionConditions"`

	// PurgeMode says when the old copy is removed. Default Gracefully.
	// +optional
	// +kubebuilder:default=Gracefully
	PurgeMode PurgeMode `json:"purgeMode,omitempty"`

	// GracePeriodSeconds is how long a Gracefully purged copy stays when the replacement does not become
	// healthy. Default 600.
	// +optional
	// +kubebuilder:validation:Minimum=1
	GracePeriodSeconds *int32 `json:"gracePeriodSeconds,omitempty"`

	// StatePreservation carries state from the old copy's status to the new one.
	// +optional
	StatePreservation *StatePreservation `json:"statePreservation,omitempty"`
}

// DecisionConditions say when an application counts as failed.
type DecisionConditions struct {
	// TolerationSeconds is how long the application may stay unhealthy before it is moved. Default 300.
	// +optional
	// +kubebuilder:default=300
	// +kubebuilder:validation:Minimum=0
	TolerationSeconds *int32 `json:"tolerationSeconds,omitempty"`
}

// ClusterFailoverBehavior says what happens to the copy on a cluster that fails over.
type ClusterFailoverBehavior struct {
	// PurgeMode says when the old copy is removed. Default Gracefully.
	// +optional
	// +kubebuilder:default=Gracefully
	PurgeMode PurgeMode `json:"purgeMode,omitempty"`

	// StatePreservation carries state from the old copy's status to the new one.
	// +optional
	StatePreservation *StatePreservation `json:"statePreservation,omitempty"`
}

// StatePreservation carries values from the old copy's status to labels on the new copy.
type StatePreservation struct {
	// Rules each copy one value.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	Rules []StatePreservationRule `json:"rules"`
}

// StatePreservationRule copies one value from the old copy's status to a label on the new one.
type StatePreservationRule struct {
	// AliasLabelName is the label that carries the value.
	// +required
	// +kubebuilder:validation:MinLength=1
	AliasLabelName string `json:"aliasLabelName"`

	// JSONPath picks the value from the old copy's status, for example {.replicas}.
	// +required
	// +kubebuilder:validation:MinLength=1
	JSONPath string `json:"jsonPath"`
}

// ConditionHonoured on a propagation policy is False when something in it cannot be honoured, for example a
// resource selector of a kind the hub does not serve; the message says which.
const ConditionHonoured = "Honoured"

// MaxListedTemplates is how many claimed templates a policy's status names.
const MaxListedTemplates = 10

// PropagationPolicyStatus is what the detector reports about a propagation policy.
type PropagationPolicyStatus struct {
	// ObservedGeneration is the policy generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// ClaimedTemplates is how many templates the policy claims.
	// +optional
	ClaimedTemplates int32 `json:"claimedTemplates,omitempty"`

	// Templates names the first claimed templates (at most 10, in order of kind, namespace and name) as
	// Kind.group namespace/name, or Kind.group name for cluster-scoped ones.
	// +optional
	// +listType=atomic
	Templates []string `json:"templates,omitempty"`

	// Conditions: Honoured.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PropagationPolicyList is a list of PropagationPolicies.
// +kubebuilder:object:root=true
type PropagationPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PropagationPolicy `json:"items"`
}

// ClusterPropagationPolicyList is a list of ClusterPropagationPolicies.
// +kubebuilder:object:root=true
type ClusterPropagationPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterPropagationPolicy `json:"items"`
}
