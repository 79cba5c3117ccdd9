package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Rebalancer asks the scheduler to place some templates afresh, once: their current placement no longer
// holds them where they are, so replicas may move back to a recovered cluster or to the first
// clusterAffinities group. The rebalancer controller sets spec.rescheduleTriggeredAt on each template's
// binding to the Rebalancer's creation time, records each result in status, and deletes the Rebalancer
// ttlSecondsAfterFinished after every template has its result. The spec cannot change: create another
// Rebalancer to rebalance again.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=rebal,categories=flotilla
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Finished",type=date,JSONPath=`.status.finishTime`
// +kubebuilder:printcolumn:name="TTL",type=integer,JSONPath=`.spec.ttlSecondsAfterFinished`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Rebalancer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec names the templates to reschedule.
	// +required
	Spec RebalancerSpec `json:"spec"`

	// Status is the result for each template.
	// +optional
	Status RebalancerStatus `json:"status,omitempty"`
}

// RebalancerSpec names the templates to reschedule: those listed in workloads and those the selector
// matches, at least one of the two.
// +kubebuilder:validation:XValidation:rule="(has(self.workloads) && size(self.workloads) > 0) || has(self.selector)",message="name at least one workload or give a selector"
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable: create another Rebalancer to rebalance again"
type RebalancerSpec struct {
	// Workloads are the templates to reschedule, each by apiVersion, kind, namespace and name.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1000
	Workloads []WorkloadReference `json:"workloads,omitempty"`

	// Selector picks more templates, of one kind, by label: every template the selector matches when the
	// controller first handles the Rebalancer.
	// +optional
	Selector *TemplateSelector `json:"selector,omitempty"`

	// TTLSecondsAfterFinished is how long a finished Rebalancer stays before it is deleted, so its status
	// can be read. Default 300; 0 deletes it as soon as it finishes.
	// +optional
	// +kubebuilder:default=300
	// +kubebuilder:validation:Minimum=0
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
}

// WorkloadReference names one template on the hub.
type WorkloadReference struct {
	// APIVersion of the template, for example apps/v1.
	// +required
	// +kubebuilder:validation:MinLength=1
	APIVersion string `json:"apiVersion"`

	// Kind of the template, for example Deployment.
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
}

// TemplateSelector selects templates of one kind by label.
type TemplateSelector struct {
	// APIVersion of the templates, for example apps/v1.
	// +required
	// +kubebuilder:validation:MinLength=1
	APIVersion string `json:"apiVersion"`

	// Kind of the templates, for example Deployment.
	// +required
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`

	// Namespace limits the selector to one namespace; empty selects in every namespace (and cluster-scoped
	// templates).
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// LabelSelector the templates' labels must match. An empty selector matches every template of the kind.
	// +required
	LabelSelector metav1.LabelSelector `json:"labelSelector"`
}

// RebalanceResult is the outcome of rescheduling one template.
// +kubebuilder:validation:Enum=Successful;NotFound;Failed
type RebalanceResult string

const (
	// RebalanceSuccessful: the template's binding was asked to reschedule afresh.
	RebalanceSuccessful RebalanceResult = "Successful"
	// RebalanceNotFound: the template has no binding (it does not exist, or no policy places it).
	RebalanceNotFound RebalanceResult = "NotFound"
	// RebalanceFailed: the binding could not be asked to reschedule; the message says why.
	RebalanceFailed RebalanceResult = "Failed"
)

// ObservedWorkload is one template of a Rebalancer and its result.
type ObservedWorkload struct {
	// Workload is the template.
	// +required
	Workload WorkloadReference `json:"workload"`

	// Result is the outcome: Successful, NotFound or Failed.
	// +required
	Result RebalanceResult `json:"result"`

	// Message says why, for NotFound and Failed.
	// +optional
	Message string `json:"message,omitempty"`
}

// RebalancerStatus is the result for each template.
type RebalancerStatus struct {
	// ObservedWorkloads lists every template of the Rebalancer (those named and those the selector matched)
	// with its result.
	// +optional
	// +listType=atomic
	ObservedWorkloads []ObservedWorkload `json:"observedWorkloads,omitempty"`

	// FinishTime is when every template had its result; the Rebalancer is deleted ttlSecondsAfterFinished
	// later.
	// +optional
	FinishTime *metav1.Time `json:"finishTime,omitempty"`
}

// RebalancerList is a list of Rebalancers.
// +kubebuilder:object:root=true
type RebalancerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the Rebalancers.
	Items []Rebalancer `json:"items"`
}
