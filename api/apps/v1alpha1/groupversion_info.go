// Package v1alpha1 holds the apps.flotilla.io API: templates that the hub expands into ordinary manifests
// before they reach a member. A HelmRelease is a Helm chart placed like any template: the hub renders its
// chart for each cluster, with that cluster's overrides, and the member gets the chart's objects.
//
// Unlike Flotilla's other groups (cluster, policy, work, ...), whose objects never leave the hub, this
// group's objects are templates: propagation policies select them. The name follows Clusternet's
// apps.clusternet.io, which holds its HelmChart and HelmRelease.
// +kubebuilder:object:generate=true
// +groupName=apps.flotilla.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the group of templates the hub expands into other objects.
const GroupName = "apps.flotilla.io"

// GroupVersion is the group and version of this API.
var GroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

// HelmReleaseKind is the HelmRelease's group and kind.
var HelmReleaseKind = schema.GroupKind{Group: GroupName, Kind: "HelmRelease"}

var (
	// SchemeBuilder registers this API's kinds with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds this API's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, &HelmRelease{}, &HelmReleaseList{})
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
