// Package v1alpha1 holds the policy.flotilla.io API: where templates go (PropagationPolicy,
// ClusterPropagationPolicy), how they change per cluster (OverridePolicy, ClusterOverridePolicy), and how
// much a namespace may use across the fleet (FederatedResourceQuota).
// +kubebuilder:object:generate=true
// +groupName=policy.flotilla.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the group and version of this API.
var GroupVersion = schema.GroupVersion{Group: "policy.flotilla.io", Version: "v1alpha1"}

var (
	// SchemeBuilder registers this API's kinds with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds this API's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion,
		&PropagationPolicy{}, &PropagationPolicyList{},
		&ClusterPropagationPolicy{}, &ClusterPropagationPolicyList{},
		&OverridePolicy{}, &OverridePolicyList{},
		&ClusterOverridePolicy{}, &ClusterOverridePolicyList{},
		&FederatedResourceQuota{}, &FederatedResourceQuotaList{},
	)
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
