// Package v1beta1 holds Open Cluster Management's Placement and PlacementDecision
// (cluster.open-cluster-management.io/v1beta1), written here from OCM's published CRDs because its Go module
// is not served to this build. The hub serves them (hub --ocm-apis) so that OCM's manifests and the tools
// that read PlacementDecisions (Argo CD's cluster decision resource generator) work against it: a Placement
// is mirrored onto the cluster.flotilla.io Placement of the same name, which decides, and its
// PlacementDecisions are copied into OCM's. The spec's parts whose shape is Flotilla's own are Flotilla's
// types; only the fields Flotilla acts on are in the schemas, any other is refused as unknown.
// +kubebuilder:object:generate=true
// +groupName=cluster.open-cluster-management.io
package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the group and version of this API.
var GroupVersion = schema.GroupVersion{Group: "cluster.open-cluster-management.io", Version: "v1beta1"}

var (
	// SchemeBuilder registers this API's kinds with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds this API's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion,
		&Placement{}, &PlacementList{},
		&PlacementDecision{}, &PlacementDecisionList{},
	)
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
