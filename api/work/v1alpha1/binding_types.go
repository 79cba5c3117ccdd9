package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// Condition types of bindings.
const (
	// ConditionScheduled is True once spec.clusters holds a valid placement.
	ConditionScheduled = "Scheduled"
	// ConditionFullyApplied is True once every target cluster applied its Work.
	ConditionFullyApplied = "FullyApplied"
	// ConditionHealthy is True once the template is healthy in every target cluster.
	ConditionHealthy = "Healthy"
	// ConditionInterpreted is False when an operation of the InterpreterCustomization of the template's kind,
	// or of the webhook that answers it (InterpreterWebhookConfiguration, failurePolicy Fail), fails for this
	// binding; its message names the customization or webhook, the operation and the error. Until it is
	// fixed, the binding keeps what the last good evaluation gave it. Absent when neither applies.
	ConditionInterpreted = "Interpreted"

	// The conditions of a progressive rollout, written by the render controller: exactly one of Progressing,
	// Complete and Failed is True; Paused is True while `flotilla rollout pause` holds the next wave.
	ConditionRolloutProgressing = "RolloutProgressing"
	ConditionRolloutComplete    = "RolloutComplete"
	ConditionRolloutPaused      = "RolloutPaused"
	ConditionRolloutFailed      = "RolloutFailed"
)

// ResourceBinding is the scheduling unit for one namespaced template: what it is, what it needs, and which
// clusters run it. The hub's detector creates it; the scheduler fills spec.clusters.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=rb,categories=flotilla
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Scheduled",type=string,JSONPath=`.status.conditions[?(@.type=="Scheduled")].status`
// +kubebuilder:printcolumn:name="Applied",type=string,JSONPath=`.status.conditions[?(@.type=="FullyApplied")].status`
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.resource.kind`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ResourceBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the template's requirements and its placement.
	Spec ResourceBindingSpec `json:"spec"`

	// Status is the scheduling result and the template's state in each cluster.
	// +optional
	Status ResourceBindingStatus `json:"status,omitempty"`
}

// ClusterResourceBinding is the scheduling unit for one cluster-scoped template.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=crb,categories=flotilla
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Scheduled",type=string,JSONPath=`.status.conditions[?(@.type=="Scheduled")].status`
// +kubebuilder:printcolumn:name="Applied",type=string,JSONPath=`.status.conditions[?(@.type=="FullyApplied")].status`
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.resource.kind`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterResourceBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the template's requirements and its placement.
	Spec ResourceBindingSpec `json:"spec"`

	// Status is the scheduling result and the template's state in each cluster.
	// +optional
	Status ResourceBindingStatus `json:"status,omitempty"`
}

// ResourceBindingSpec describes a template, what it needs, and where it goes. The detector owns every field
// but clusters, gracefulEvictionTasks (the scheduler's) and rescheduleTriggeredAt (a person's); each writes
// its fields by server-side apply under its own field manager.
type ResourceBindingSpec struct {
	// Resource is the template this binding places.
	// +required
	Resource ObjectReference `json:"resource"`

	// PropagateDeps makes the template's dependencies follow it (copied from the policy).
	// +optional
	PropagateDeps bool `json:"propagateDeps,omitempty"`

	// ReplicaRequirements are the resources one replica requests, for dynamic weights and capacity checks.
	// +optional
	ReplicaRequirements *ReplicaRequirements `json:"replicaRequirements,omitempty"`

	// Replicas is the template's replica count; 0 for kinds without replicas.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Replicas int32 `json:"replicas,omitempty"`

	// Clusters is the scheduling result: each target cluster and, for Divided templates, its replicas.
	// Written whole by the scheduler.
	// +optional
	// +listType=atomic
	Clusters []TargetCluster `json:"clusters,omitempty"`

	// Placement is the policy's placement at the time the binding was written.
	// +optional
	Placement *policyv1alpha1.Placement `json:"placement,omitempty"`

	// GracefulEvictionTasks are clusters being left: their copy stays until the replacement is healthy or the
	// grace period passes. Written whole by the scheduler, which also drops a task once the binding is Healthy
	// at its current generation or the task's grace period has passed.
	// +optional
	// +listType=atomic
	GracefulEvictionTasks []GracefulEvictionTask `json:"gracefulEvictionTasks,omitempty"`

	// FailoverRecords remember the clusters this binding failed over from, until each record expires: a
	// cluster its application failed on (reason ApplicationFailure) stays out of this binding's placement
	// while its record lasts, and the state a failover preserved is injected into the copies on the clusters
	// the binding moved to. Written whole by the scheduler, which drops expired records. A person clears a
	// record by removing it from the list (for example with a JSON patch); the scheduler never adds it back.
	// +optional
	// +listType=atomic
	FailoverRecords []FailoverRecord `json:"failoverRecords,omitempty"`

	// SchedulerName is the scheduler responsible for this binding.
	// +optional
	SchedulerName string `json:"schedulerName,omitempty"`

	// Failover is the policy's failover behaviour.
	// +optional
	Failover *policyv1alpha1.FailoverBehavior `json:"failover,omitempty"`

	// Rollout is the policy's rollout strategy. Omitted: every cluster is updated at once.
	// +optional
	Rollout *policyv1alpha1.RolloutStrategy `json:"rollout,omitempty"`

	// PlacementRef is the policy's placementRef: the scheduler places the binding on the Placement's
	// decisions, and a rollout uses its decision groups.
	// +optional
	PlacementRef *policyv1alpha1.PlacementRef `json:"placementRef,omitempty"`

	// ConflictResolution is the policy's conflict resolution. Default Abort.
	// +optional
	// +kubebuilder:default=Abort
	ConflictResolution policyv1alpha1.ConflictResolution `json:"conflictResolution,omitempty"`

	// RescheduleTriggeredAt asks the scheduler to place the binding afresh when it is newer than the last
	// schedule.
	// +optional
	RescheduleTriggeredAt *metav1.Time `json:"rescheduleTriggeredAt,omitempty"`

	// Suspension is the policy's suspension.
	// +optional
	Suspension *policyv1alpha1.Suspension `json:"suspension,omitempty"`

	// PreserveResourcesOnDeletion keeps member objects when the template is deleted.
	// +optional
	PreserveResourcesOnDeletion *bool `json:"preserveResourcesOnDeletion,omitempty"`

	// SchedulePriority is the binding's place in the scheduler's queue, resolved by the detector from its
	// policy's schedulePriority: when many bindings wait, those of higher priority are placed first.
	// Omitted: priority 0 (no schedulePriority, or its PriorityClass does not exist; the policy's Honoured
	// condition says which).
	// +optional
	SchedulePriority *SchedulePriority `json:"schedulePriority,omitempty"`
}

// SchedulePriority is a binding's priority in the scheduling queue.
type SchedulePriority struct {
	// Priority is the value of the PriorityClass its policy names. Higher is placed first.
	// +optional
	Priority int32 `json:"priority,omitempty"`
}

// ObjectReference identifies a template on the hub.
type ObjectReference struct {
	// APIVersion of the template.
	// +required
	// +kubebuilder:validation:MinLength=1
	APIVersion string `json:"apiVersion"`

	// Kind of the template.
	// +required
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`

	// Namespace of the template; empty for cluster-scoped templates.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Name of the template.
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// UID of the template. The binding does not record the template's resourceVersion: the binding
	// controller reads the template itself, so a template change need not rewrite its binding.
	// +optional
	UID types.UID `json:"uid,omitempty"`
}

// ReplicaRequirements are what one replica needs.
type ReplicaRequirements struct {
	// NodeClaim is where in a member one replica may run: its pod template's node selector, required node
	// affinity and tolerations.
	// +optional
	NodeClaim *NodeClaim `json:"nodeClaim,omitempty"`

	// ResourceRequest is one replica's resource requests.
	// +optional
	ResourceRequest corev1.ResourceList `json:"resourceRequest,omitempty"`

	// Namespace of the workload.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// PriorityClassName of the workload's pods.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
}

// NodeClaim is what a replica asks of the node it runs on, besides resources.
type NodeClaim struct {
	// HardNodeAffinity is the pod's requiredDuringSchedulingIgnoredDuringExecution node affinity.
	// +optional
	HardNodeAffinity *corev1.NodeSelector `json:"hardNodeAffinity,omitempty"`

	// NodeSelector is the pod's node selector.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Tolerations are the pod's tolerations.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
}

// TargetCluster is one cluster of the scheduling result.
type TargetCluster struct {
	// Name of the cluster.
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// Replicas the cluster runs (Divided); for Duplicated, the template's full count.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Replicas int32 `json:"replicas,omitempty"`
}

// GracefulEvictionTask is a cluster being left: its copy stays until the replacement is healthy.
type GracefulEvictionTask struct {
	// FromCluster is the cluster being left.
	// +required
	// +kubebuilder:validation:MinLength=1
	FromCluster string `json:"fromCluster"`

	// PurgeMode says when the old copy is removed.
	// +optional
	PurgeMode policyv1alpha1.PurgeMode `json:"purgeMode,omitempty"`

	// Replicas the old copy ran.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Reason is a CamelCase word for why the cluster is left, for example TaintUntolerated.
	// +required
	// +kubebuilder:validation:MinLength=1
	Reason string `json:"reason"`

	// Message says why, for a person.
	// +optional
	Message string `json:"message,omitempty"`

	// Producer is the controller that asked for the eviction.
	// +required
	// +kubebuilder:validation:MinLength=1
	Producer string `json:"producer"`

	// GracePeriodSeconds is how long the old copy may stay when the replacement is not healthy.
	// +optional
	GracePeriodSeconds *int32 `json:"gracePeriodSeconds,omitempty"`

	// CreationTimestamp is when the eviction started.
	// +optional
	CreationTimestamp *metav1.Time `json:"creationTimestamp,omitempty"`
}

// EvictionEnd says what ends an eviction task.
// +kubebuilder:validation:Enum=Replacement;Person
type EvictionEnd string

const (
	// EvictionEndReplacement: the binding turning Healthy at its current generation (the placement without
	// the cluster being left runs well), or the task's deadline passing, whichever comes first.
	EvictionEndReplacement EvictionEnd = "Replacement"
	// EvictionEndPerson: only a person, who removes the task from the binding (purge mode Never).
	EvictionEndPerson EvictionEnd = "Person"
)

// EvictionStatus is what ends one eviction task of a binding.
type EvictionStatus struct {
	// FromCluster names the task: its spec.gracefulEvictionTasks[].fromCluster.
	// +required
	// +kubebuilder:validation:MinLength=1
	FromCluster string `json:"fromCluster"`

	// EndedBy says what ends the task: Replacement or Person.
	// +required
	EndedBy EvictionEnd `json:"endedBy"`

	// Deadline is when the task's grace period ends, for a task ended by Replacement: the scheduler then drops
	// the task, and the copy on fromCluster goes, even if the replacement is not healthy. Absent when there is
	// none (a task without a creation time waits for health alone; a Person task waits for a person).
	// +optional
	Deadline *metav1.Time `json:"deadline,omitempty"`
}

// TaintedCluster is a cluster of a binding's placement that carries a NoExecute taint, and when the binding
// leaves it.
type TaintedCluster struct {
	// Cluster is the cluster's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	Cluster string `json:"cluster"`

	// LeavesAt is when the scheduler moves the binding off the cluster: when the first of the binding's
	// tolerations of the cluster's NoExecute taints runs out. A time that has passed means the move is due (a
	// taint the binding does not tolerate, or no longer): the scheduler moves it on its pass, and keeps it on
	// the cluster while no other cluster fits. Absent: the binding tolerates every NoExecute taint of the
	// cluster without a time limit and stays.
	// +optional
	LeavesAt *metav1.Time `json:"leavesAt,omitempty"`

	// DefaultToleration is the hub's default failover toleration (its --default-failover-toleration) when
	// that is what sets leavesAt: the binding's policy does not tolerate the health taint that runs out
	// itself. Absent when the binding's own tolerations set leavesAt.
	// +optional
	DefaultToleration *metav1.Duration `json:"defaultToleration,omitempty"`
}

// FailoverRecord is a cluster a binding failed over from, and the state it carried away.
type FailoverRecord struct {
	// FromCluster is the cluster the binding left.
	// +required
	// +kubebuilder:validation:MinLength=1
	FromCluster string `json:"fromCluster"`

	// Reason is why: ApplicationFailure (the application stayed unhealthy there for the policy's
	// tolerationSeconds; the cluster stays out of this binding's placement until the record expires) or
	// TaintUntolerated (a NoExecute taint; the record only carries preserved state).
	// +required
	// +kubebuilder:validation:MinLength=1
	Reason string `json:"reason"`

	// CreationTimestamp is when the binding failed over.
	// +optional
	CreationTimestamp *metav1.Time `json:"creationTimestamp,omitempty"`

	// ExpirationTimestamp is when the record ends: the cluster may host the binding again and the preserved
	// labels are no longer injected.
	// +required
	ExpirationTimestamp metav1.Time `json:"expirationTimestamp"`

	// PreservedLabelState are the labels the policy's statePreservation rules took from the last status the
	// failed cluster reported; they are injected into the copies on clusters not in clustersBeforeFailover.
	// +optional
	PreservedLabelState map[string]string `json:"preservedLabelState,omitempty"`

	// ClustersBeforeFailover are the clusters the binding ran on when it failed over; their copies get no
	// preserved labels.
	// +optional
	// +listType=atomic
	ClustersBeforeFailover []string `json:"clustersBeforeFailover,omitempty"`
}

// ResourceBindingStatus is the scheduling result and the template's state in each cluster.
type ResourceBindingStatus struct {
	// SchedulerObservedGeneration is the binding generation the scheduler last placed.
	// +optional
	SchedulerObservedGeneration int64 `json:"schedulerObservedGeneration,omitempty"`

	// SchedulerObservedAffinityName is the clusterAffinities group the current placement uses.
	// +optional
	SchedulerObservedAffinityName string `json:"schedulerObservedAffinityName,omitempty"`

	// LastScheduledTime is when the scheduler last placed the binding.
	// +optional
	LastScheduledTime *metav1.Time `json:"lastScheduledTime,omitempty"`

	// RescheduleTriggerObserved is the spec.rescheduleTriggeredAt the scheduler last answered with a fresh
	// scheduling pass. Times are kept to the second, so comparing the trigger with lastScheduledTime cannot
	// tell a placement made just before a trigger from one made for it.
	// +optional
	RescheduleTriggerObserved *metav1.Time `json:"rescheduleTriggerObserved,omitempty"`

	// NotPlacedOn says why the last scheduling pass did not choose each cluster it left out: every filter
	// that refused the cluster (affinity, taint, API, failover record), or the spread constraints, replica
	// division or capacity that left a feasible cluster out. Sorted by cluster, then plugin; at most
	// MaxClusterVerdicts entries, those of the clusters refused for the fewest reasons when not all fit
	// (notPlacedOnOmitted counts the rest). Written by the scheduler, only when it changes; `flotilla
	// explain` and the dashboard read it.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	NotPlacedOn []ClusterVerdict `json:"notPlacedOn,omitempty"`

	// NotPlacedOnOmitted is how many verdicts did not fit in notPlacedOn.
	// +optional
	// +kubebuilder:validation:Minimum=0
	NotPlacedOnOmitted int32 `json:"notPlacedOnOmitted,omitempty"`

	// Evictions says what ends each of spec.gracefulEvictionTasks, one entry per task, as the scheduler
	// decides it. Written by the scheduler with the tasks; `flotilla get bindings -o wide` and `flotilla
	// status` read it.
	// +optional
	// +listType=map
	// +listMapKey=fromCluster
	Evictions []EvictionStatus `json:"evictions,omitempty"`

	// TaintedClusters says, for each cluster of spec.clusters that carries a NoExecute taint, when the binding
	// leaves it, as the scheduler decides it from the binding's tolerations and the hub's default failover
	// toleration. Written by the scheduler at each pass; `flotilla describe cluster` reads it. Empty while no
	// cluster of the placement carries a NoExecute taint.
	// +optional
	// +listType=map
	// +listMapKey=cluster
	TaintedClusters []TaintedCluster `json:"taintedClusters,omitempty"`

	// Rollout says where a progressive rollout stands: the revision it brings, the one clusters not yet
	// reached keep, and each cluster's state. Written by the render controller; omitted for a binding whose
	// rollout is All.
	// +optional
	Rollout *RolloutStatus `json:"rollout,omitempty"`

	// Conditions: Scheduled, FullyApplied, Healthy, Interpreted.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// AggregatedStatus is the template's state in each target cluster.
	// +optional
	AggregatedStatus []AggregatedStatusItem `json:"aggregatedStatus,omitempty"`
}

// ResourceHealth is the health of an object in a member.
// +kubebuilder:validation:Enum=Healthy;Unhealthy;Unknown
type ResourceHealth string

const (
	ResourceHealthy   ResourceHealth = "Healthy"
	ResourceUnhealthy ResourceHealth = "Unhealthy"
	ResourceUnknown   ResourceHealth = "Unknown"
)

// AggregatedStatusItem is the template's state in one cluster.
type AggregatedStatusItem struct {
	// ClusterName is the member cluster.
	// +required
	// +kubebuilder:validation:MinLength=1
	ClusterName string `json:"clusterName"`

	// Status summarises the object's status in the member: its top-level numbers, booleans and short
	// strings (replica counts, observedGeneration, phase). The full status is in the cluster's Work.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	Status *runtime.RawExtension `json:"status,omitempty"`

	// Applied is true once the object was applied in the member.
	// +optional
	Applied bool `json:"applied,omitempty"`

	// AppliedMessage says why applying failed.
	// +optional
	AppliedMessage string `json:"appliedMessage,omitempty"`

	// Health is the object's health in the member.
	// +optional
	Health ResourceHealth `json:"health,omitempty"`

	// HealthTransitionTime is when health last changed to its current value, as the hub saw it. Application
	// failover measures how long the object has been unhealthy from it, so the measure survives a restart
	// of the hub.
	// +optional
	HealthTransitionTime *metav1.Time `json:"healthTransitionTime,omitempty"`

	// Unschedulable counts the object's pods the member's scheduler found no node for, and since when.
	// +optional
	Unschedulable *UnschedulableReplicas `json:"unschedulable,omitempty"`
}

// ResourceBindingList is a list of ResourceBindings.
// +kubebuilder:object:root=true
type ResourceBindingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ResourceBinding `json:"items"`
}

// ClusterResourceBindingList is a list of ClusterResourceBindings.
// +kubebuilder:object:root=true
type ClusterResourceBindingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterResourceBinding `json:"items"`
}

// MaxClusterVerdicts bounds status.notPlacedOn, so a binding stays small on a large fleet.
const MaxClusterVerdicts = 100

// ClusterVerdict is why the scheduler did not place a binding on one cluster.
type ClusterVerdict struct {
	// Cluster is the cluster's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	Cluster string `json:"cluster"`

	// Plugin is what left the cluster out: a filter (APIEnablement, ClusterAffinity, TaintToleration,
	// FailoverRecords), ClusterRemoval, SpreadConstraints, ReplicaScheduling or Capacity.
	// +required
	// +kubebuilder:validation:MinLength=1
	Plugin string `json:"plugin"`

	// Reason says why, for a person; it reads after the cluster's name ("c1 have the untolerated taint ...").
	// +required
	Reason string `json:"reason"`
}

// RolloutState is where one cluster stands in a rollout.
// +kubebuilder:validation:Enum=Pending;Progressing;Succeeded;Failed
type RolloutState string

const (
	// RolloutPending: the cluster still runs the stable revision; the rollout has not reached it.
	RolloutPending RolloutState = "Pending"
	// RolloutProgressing: the cluster's Work carries the target revision; it is not yet healthy for
	// minSuccessTime.
	RolloutProgressing RolloutState = "Progressing"
	// RolloutSucceeded: the cluster was healthy on the target revision for minSuccessTime.
	RolloutSucceeded RolloutState = "Succeeded"
	// RolloutFailed: the cluster was not healthy on the target revision within progressDeadline.
	RolloutFailed RolloutState = "Failed"
)

// RolloutStatus is where a progressive rollout stands.
type RolloutStatus struct {
	// TargetRevision is the revision being rolled out (the number of its ControllerRevision).
	// +optional
	TargetRevision int64 `json:"targetRevision,omitempty"`

	// TargetHash identifies the target revision's content.
	// +optional
	TargetHash string `json:"targetHash,omitempty"`

	// StableRevision is the last revision every cluster succeeded on: clusters the rollout has not reached,
	// and clusters placed during the rollout, run it.
	// +optional
	StableRevision int64 `json:"stableRevision,omitempty"`

	// StableHash identifies the stable revision's content.
	// +optional
	StableHash string `json:"stableHash,omitempty"`

	// ObservedTemplateGeneration is the template generation this status speaks of: until it reaches the
	// template's generation, the status is of the content before the template's latest change.
	// +optional
	ObservedTemplateGeneration int64 `json:"observedTemplateGeneration,omitempty"`

	// Wave counts the waves started for the target revision, from 1.
	// +optional
	Wave int32 `json:"wave,omitempty"`

	// Clusters is each target cluster's state, sorted by the order the rollout reaches them.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=1000
	Clusters []ClusterRollout `json:"clusters,omitempty"`
}

// ClusterRollout is one cluster's state in a rollout.
type ClusterRollout struct {
	// Name of the cluster.
	// +required
	Name string `json:"name"`

	// Group is the decision group the cluster is in (its name, or its index when the group has none).
	// +optional
	Group string `json:"group,omitempty"`

	// Revision is the revision the cluster's Work carries.
	// +optional
	Revision int64 `json:"revision,omitempty"`

	// State is Pending, Progressing, Succeeded or Failed.
	// +required
	State RolloutState `json:"state"`

	// Since is when the cluster entered its state; for Progressing, when it was updated, and HealthySince
	// when it became healthy on the target revision.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`

	// HealthySince is when the cluster became healthy on the target revision (while Progressing).
	// +optional
	HealthySince *metav1.Time `json:"healthySince,omitempty"`
}
