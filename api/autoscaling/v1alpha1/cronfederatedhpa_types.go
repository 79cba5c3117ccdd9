package v1alpha1

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CronFederatedHPA scales by the clock: at each rule's schedule it sets a template's replicas, or a
// FederatedHPA's minReplicas and maxReplicas, and records what it did in status.
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=cronfhpa,categories=flotilla
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Reference",type=string,JSONPath=`.spec.scaleTargetRef.name`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type CronFederatedHPA struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what to scale and when.
	// +required
	Spec CronFederatedHPASpec `json:"spec"`

	// Status is each rule's next and past runs.
	// +optional
	Status CronFederatedHPAStatus `json:"status,omitempty"`
}

// CronFederatedHPASpec names the target and the rules that scale it.
type CronFederatedHPASpec struct {
	// ScaleTargetRef names, in the CronFederatedHPA's namespace, a template with spec.replicas or a
	// FederatedHPA (apiVersion autoscaling.flotilla.io/v1alpha1, kind FederatedHPA).
	// +required
	ScaleTargetRef autoscalingv2.CrossVersionObjectReference `json:"scaleTargetRef"`

	// Rules are the schedules and what each sets.
	// +required
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	Rules []CronFederatedHPARule `json:"rules"`
}

// CronFederatedHPARule is one schedule and what it sets. A template target takes targetReplicas; a
// FederatedHPA target takes targetMinReplicas and/or targetMaxReplicas.
type CronFederatedHPARule struct {
	// Name identifies the rule within the CronFederatedHPA.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Schedule is a standard five-field cron expression ("0 8 * * 1-5") or a descriptor such as "@hourly".
	// +required
	// +kubebuilder:validation:MinLength=1
	Schedule string `json:"schedule"`

	// TargetReplicas is the replica count a template target is set to.
	// +optional
	// +kubebuilder:validation:Minimum=0
	TargetReplicas *int32 `json:"targetReplicas,omitempty"`

	// TargetMinReplicas is the minReplicas a FederatedHPA target is set to.
	// +optional
	// +kubebuilder:validation:Minimum=1
	TargetMinReplicas *int32 `json:"targetMinReplicas,omitempty"`

	// TargetMaxReplicas is the maxReplicas a FederatedHPA target is set to.
	// +optional
	// +kubebuilder:validation:Minimum=1
	TargetMaxReplicas *int32 `json:"targetMaxReplicas,omitempty"`

	// Suspend stops the rule from running; its history stays.
	// +optional
	// +kubebuilder:default=false
	Suspend *bool `json:"suspend,omitempty"`

	// TimeZone is the IANA time zone the schedule is read in, such as "Europe/Paris". Empty: UTC.
	// +optional
	TimeZone *string `json:"timeZone,omitempty"`

	// SuccessfulHistoryLimit is how many successful runs status keeps. Default 3.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=32
	SuccessfulHistoryLimit *int32 `json:"successfulHistoryLimit,omitempty"`

	// FailedHistoryLimit is how many failed runs status keeps. Default 3.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=32
	FailedHistoryLimit *int32 `json:"failedHistoryLimit,omitempty"`
}

// CronFederatedHPAStatus is each rule's next and past runs.
type CronFederatedHPAStatus struct {
	// ExecutionHistories has one entry per rule.
	// +optional
	// +listType=map
	// +listMapKey=ruleName
	ExecutionHistories []ExecutionHistory `json:"executionHistories,omitempty"`
}

// ExecutionHistory is one rule's next run and its latest runs, newest first.
type ExecutionHistory struct {
	// RuleName is the rule's name.
	// +required
	RuleName string `json:"ruleName"`

	// NextExecutionTime is when the rule runs next; empty while it is suspended.
	// +optional
	NextExecutionTime *metav1.Time `json:"nextExecutionTime,omitempty"`

	// SuccessfulExecutions are the latest runs that set their values, newest first.
	// +optional
	// +listType=atomic
	SuccessfulExecutions []SuccessfulExecution `json:"successfulExecutions,omitempty"`

	// FailedExecutions are the latest runs that could not, newest first.
	// +optional
	// +listType=atomic
	FailedExecutions []FailedExecution `json:"failedExecutions,omitempty"`
}

// SuccessfulExecution is a run that set its values.
type SuccessfulExecution struct {
	// ScheduleTime is the time the schedule named.
	// +required
	ScheduleTime *metav1.Time `json:"scheduleTime"`

	// ExecutionTime is when the run happened.
	// +required
	ExecutionTime *metav1.Time `json:"executionTime"`

	// AppliedReplicas is the replica count set on a template.
	// +optional
	AppliedReplicas *int32 `json:"appliedReplicas,omitempty"`

	// AppliedMaxReplicas is the maxReplicas set on a FederatedHPA.
	// +optional
	AppliedMaxReplicas *int32 `json:"appliedMaxReplicas,omitempty"`

	// AppliedMinReplicas is the minReplicas set on a FederatedHPA.
	// +optional
	AppliedMinReplicas *int32 `json:"appliedMinReplicas,omitempty"`
}

// FailedExecution is a run that could not set its values.
type FailedExecution struct {
	// ScheduleTime is the time the schedule named.
	// +required
	ScheduleTime *metav1.Time `json:"scheduleTime"`

	// ExecutionTime is when the run was tried.
	// +required
	ExecutionTime *metav1.Time `json:"executionTime"`

	// Message says why it failed.
	// +required
	Message string `json:"message"`
}

// CronFederatedHPAList is a list of CronFederatedHPAs.
// +kubebuilder:object:root=true
type CronFederatedHPAList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CronFederatedHPA `json:"items"`
}
