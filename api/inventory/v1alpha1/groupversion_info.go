// Package v1alpha1 holds the ClusterProfile of the SIG-Multicluster Cluster Inventory API (KEP-4322,
// multicluster.x-k8s.io/v1alpha1), written here from its published CRD because its Go module is not served
// to this build: the hub publishes one ClusterProfile per Cluster so other tools (Argo CD, MultiKueue) see the
// fleet.
// +kubebuilder:object:generate=true
// +groupName=multicluster.x-k8s.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the group and version of this API.
var GroupVersion = schema.GroupVersion{Group: "multicluster.x-k8s.io", Version: "v1alpha1"}

var (
	// SchemeBuilder registers this API's kinds with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds this API's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, &ClusterProfile{}, &ClusterProfileList{})
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
