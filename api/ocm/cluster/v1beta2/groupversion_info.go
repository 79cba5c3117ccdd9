// Package v1beta2 holds Open Cluster Management's ManagedClusterSet and ManagedClusterSetBinding
// (cluster.open-cluster-management.io/v1beta2), written here from OCM's published CRDs because its Go module
// is not served to this build. The hub serves them (hub --ocm-apis), each mirrored onto Flotilla's
// ClusterSet or ClusterSetBinding of the same name, whose status is copied back. Only the fields Flotilla
// acts on are in the schemas: any other is refused as unknown.
// +kubebuilder:object:generate=true
// +groupName=cluster.open-cluster-management.io
package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the group and version of this API.
var GroupVersion = schema.GroupVersion{Group: "cluster.open-cluster-management.io", Version: "v1beta2"}

var (
	// SchemeBuilder registers this API's kinds with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds this API's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion,
		&ManagedClusterSet{}, &ManagedClusterSetList{},
		&ManagedClusterSetBinding{}, &ManagedClusterSetBindingList{},
	)
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}

// ResourceManagedClusterSetsBind is the subresource whose create verb, on the set by name, lets a user write a
// ManagedClusterSetBinding naming it (OCM's RBAC; Flotilla's clustersets/bind grants the same).
const ResourceManagedClusterSetsBind = "managedclustersets/bind"
