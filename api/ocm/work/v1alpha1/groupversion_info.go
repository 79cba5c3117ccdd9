// Package v1alpha1 holds Open Cluster Management's ManifestWorkReplicaSet (work.open-cluster-management.io/
// v1alpha1), written here from OCM's published CRD. The hub serves it (hub --ocm-apis): internal/mirror
// creates one ManifestWork per cluster its placements decide on and rolls template changes out with
// Flotilla's rollout planner. Only the fields Flotilla acts on are in the schema (cascadeDeletionPolicy, for
// one, is refused as unknown); status.placementRollouts is a Flotilla addition that keeps each placement's
// rollout across restarts.
// +kubebuilder:object:generate=true
// +groupName=work.open-cluster-management.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the group and version of this API.
var GroupVersion = schema.GroupVersion{Group: "work.open-cluster-management.io", Version: "v1alpha1"}

var (
	// SchemeBuilder registers this API's kinds with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds this API's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, &ManifestWorkReplicaSet{}, &ManifestWorkReplicaSetList{})
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
