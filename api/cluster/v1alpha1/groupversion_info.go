// Package v1alpha1 holds the cluster.flotilla.io API: the Cluster kind, one object per member cluster, and
// ClusterSets with the ClusterSetBindings that grant them to namespaces, and Placements with the
// PlacementDecisions that hold what they picked.
// +kubebuilder:object:generate=true
// +groupName=cluster.flotilla.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the group and version of this API.
var GroupVersion = schema.GroupVersion{Group: "cluster.flotilla.io", Version: "v1alpha1"}

var (
	// SchemeBuilder registers this API's kinds with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds this API's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, &Cluster{}, &ClusterList{},
		&ClusterSet{}, &ClusterSetList{}, &ClusterSetBinding{}, &ClusterSetBindingList{},
		&Placement{}, &PlacementList{}, &PlacementDecision{}, &PlacementDecisionList{})
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
