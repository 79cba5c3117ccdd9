// Package v1alpha1 holds the work.flotilla.io API: the scheduling unit (ResourceBinding,
// ClusterResourceBinding), the rendered manifests for one cluster (Work), and requests to reschedule
// templates afresh (Rebalancer).
// +kubebuilder:object:generate=true
// +groupName=work.flotilla.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the group and version of this API.
var GroupVersion = schema.GroupVersion{Group: "work.flotilla.io", Version: "v1alpha1"}

var (
	// SchemeBuilder registers this API's kinds with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds this API's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion,
		&ResourceBinding{}, &ResourceBindingList{},
		&ClusterResourceBinding{}, &ClusterResourceBindingList{},
		&Work{}, &WorkList{},
		&Rebalancer{}, &RebalancerList{},
	)
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
