// Package v1alpha1 holds the addon.flotilla.io API: extensions of the fleet. An AddOn declares once what it
// installs in each cluster, where, with which configuration, and what its agent may do on the hub; a
// ClusterAddOn, in a cluster's namespace, enables it on that cluster and reports how it runs there; an
// AddOnConfig carries variables, registries and node placement an AddOn's clusters are configured with. The
// vocabulary is Open Cluster Management's add-on framework (ClusterManagementAddOn, ManagedClusterAddOn,
// AddOnTemplate, AddOnDeploymentConfig).
// +kubebuilder:object:generate=true
// +groupName=addon.flotilla.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the group and version of this API.
var GroupVersion = schema.GroupVersion{Group: "addon.flotilla.io", Version: "v1alpha1"}

var (
	// SchemeBuilder registers this API's kinds with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds this API's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion,
		&AddOn{}, &AddOnList{},
		&ClusterAddOn{}, &ClusterAddOnList{},
		&AddOnConfig{}, &AddOnConfigList{},
	)
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}

// OCMGroup is Open Cluster Management's add-on API group.
const OCMGroup = "addon.open-cluster-management.io"
