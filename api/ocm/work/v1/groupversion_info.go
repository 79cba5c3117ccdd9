// Package v1 holds Open Cluster Management's ManifestWork (work.open-cluster-management.io/v1), written here
// from OCM's published CRD because its Go module is not served to this build. The hub serves it (hub
// --ocm-apis) so a ManifestWork is applied as it is; internal/mirror keeps each one, in the namespace named
// after its cluster, as the work.flotilla.io Work in the cluster's Flotilla namespace, which the executor
// applies like any other. Only the fields Flotilla acts on are in the schema: any other (executor,
// conditionRules, ignoreFields, ttlSecondsAfterFinished) is refused as unknown, never taken and ignored.
// +kubebuilder:object:generate=true
// +groupName=work.open-cluster-management.io
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the group and version of this API.
var GroupVersion = schema.GroupVersion{Group: "work.open-cluster-management.io", Version: "v1"}

var (
	// SchemeBuilder registers this API's kinds with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds this API's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, &ManifestWork{}, &ManifestWorkList{})
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
