package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FederatedResourceQuotaConditionEnforced is True while a FederatedResourceQuota's static assignments are in
// force in the member clusters they name (their ResourceQuotas applied).
const FederatedResourceQuotaConditionEnforced = "Enforced"

// FederatedResourceQuota caps what the templates of its namespace may request across the fleet: the hub
// refuses a template create, update or scale that would take the namespace's fleet-wide usage over
// spec.overall, and each static assignment becomes a ResourceQuota in the member it names. The field names
// are Karmada's, so Karmada's YAML works with this apiVersion.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=frq,categories=flotilla
// +kubebuilder:subresource:status
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="metadata.name: at most 63 characters (it labels the Works that carry the quota to its members)"
// +kubebuilder:printcolumn:name="Overall",type=string,JSONPath=`.status.overall`,priority=1
// +kubebuilder:printcolumn:name="Used",type=string,JSONPath=`.status.overallUsed`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type FederatedResourceQuota struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the fleet-wide cap and its per-cluster assignments.
	Spec FederatedResourceQuotaSpec `json:"spec"`

	// Status is the cap's usage, fleet-wide and per cluster.
	// +optional
	Status FederatedResourceQuotaStatus `json:"status,omitempty"`
}

// FederatedResourceQuotaSpec is a namespace's fleet-wide cap and its per-cluster assignments.
type FederatedResourceQuotaSpec struct {
	// Overall is the most the namespace's templates may request across the fleet: replicas times each
	// replica's requests, summed over the namespace's placed templates. Never negative, and no static
	// assignment has more of a resource: the hub's admission checks both, in Go (a CEL rule reading every
	// quantity of a map is beyond the API server's cost budget for a CRD).
	// +required
	// +kubebuilder:validation:MaxProperties=64
	Overall corev1.ResourceList `json:"overall"`

	// StaticAssignments gives named clusters a ResourceQuota of their own, kept in the member by Flotilla; one
	// per cluster.
	// +optional
	// +listType=map
	// +listMapKey=clusterName
	// +kubebuilder:validation:MaxItems=1000
	StaticAssignments []StaticClusterAssignment `json:"staticAssignments,omitempty"`
}

// StaticClusterAssignment is the quota of one cluster.
type StaticClusterAssignment struct {
	// ClusterName is the cluster the quota applies in.
	// +required
	// +kubebuilder:validation:MinLength=1
	ClusterName string `json:"clusterName"`

	// Hard is the member ResourceQuota's spec.hard.
	// +required
	// +kubebuilder:validation:MaxProperties=64
	Hard corev1.ResourceList `json:"hard"`
}

// FederatedResourceQuotaStatus is a FederatedResourceQuota's usage, fleet-wide and per cluster.
type FederatedResourceQuotaStatus struct {
	// Overall is spec.overall as last enforced.
	// +optional
	Overall corev1.ResourceList `json:"overall,omitempty"`

	// OverallUsed is what the namespace's placed templates request across the fleet, computed on the hub.
	// +optional
	OverallUsed corev1.ResourceList `json:"overallUsed,omitempty"`

	// AggregatedStatus is each static assignment's ResourceQuota as its member reports it.
	// +optional
	AggregatedStatus []ClusterQuotaStatus `json:"aggregatedStatus,omitempty"`

	// Conditions: Enforced.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ClusterQuotaStatus is one member ResourceQuota's hard and used.
type ClusterQuotaStatus struct {
	// ClusterName is the member cluster.
	ClusterName string `json:"clusterName"`

	// Hard is the quota's status.hard in the member.
	// +optional
	Hard corev1.ResourceList `json:"hard,omitempty"`

	// Used is the quota's status.used in the member.
	// +optional
	Used corev1.ResourceList `json:"used,omitempty"`
}

// FederatedResourceQuotaList is a list of FederatedResourceQuotas.
// +kubebuilder:object:root=true
type FederatedResourceQuotaList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FederatedResourceQuota `json:"items"`
}
