package v1alpha1

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FederatedHPA scales a template on the hub by the metrics of its pods in every member it is placed in: the
// hub reads the pods' resource metrics (metrics.k8s.io) and custom metrics (custom.metrics.k8s.io) from each
// member, computes the replicas the whole fleet needs with the HorizontalPodAutoscaler's algorithm, and
// writes them to the template's spec.replicas; the template's placement divides them among the members. No
// HorizontalPodAutoscaler is created in a member.
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=fhpa,categories=flotilla
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Reference",type=string,JSONPath=`.spec.scaleTargetRef.name`
// +kubebuilder:printcolumn:name="MinPods",type=integer,JSONPath=`.spec.minReplicas`
// +kubebuilder:printcolumn:name="MaxPods",type=integer,JSONPath=`.spec.maxReplicas`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.status.currentReplicas`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type FederatedHPA struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what to scale and by which metrics.
	// +required
	Spec FederatedHPASpec `json:"spec"`

	// Status is the last scaling's outcome, as a HorizontalPodAutoscaler's.
	// +optional
	Status autoscalingv2.HorizontalPodAutoscalerStatus `json:"status,omitempty"`
}

// FederatedHPASpec says which template to scale, between which bounds, by which metrics and how fast.
type FederatedHPASpec struct {
	// ScaleTargetRef names the template to scale, in the FederatedHPA's namespace: a kind with spec.replicas
	// (Deployment, StatefulSet, or a custom kind whose interpreter knows its replicas).
	// +required
	ScaleTargetRef autoscalingv2.CrossVersionObjectReference `json:"scaleTargetRef"`

	// MinReplicas is the fewest replicas across the fleet. Default 1.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	MinReplicas *int32 `json:"minReplicas,omitempty"`

	// MaxReplicas is the most replicas across the fleet.
	// +required
	// +kubebuilder:validation:Minimum=1
	MaxReplicas int32 `json:"maxReplicas"`

	// Metrics are what the replica count follows, as in a HorizontalPodAutoscaler: the largest count any of
	// them asks for wins. Resource, ContainerResource and Pods metrics are read from the members; Object and
	// External metrics are not supported. Empty: 80% average CPU utilization.
	// +optional
	// +listType=atomic
	Metrics []autoscalingv2.MetricSpec `json:"metrics,omitempty"`

	// Behavior bounds how fast the count changes each way, as in a HorizontalPodAutoscaler (stabilization
	// windows and rate policies). Empty: the HorizontalPodAutoscaler's defaults.
	// +optional
	Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior `json:"behavior,omitempty"`
}

// FederatedHPAList is a list of FederatedHPAs.
// +kubebuilder:object:root=true
type FederatedHPAList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FederatedHPA `json:"items"`
}
