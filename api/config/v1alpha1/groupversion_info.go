// Package v1alpha1 holds the config.flotilla.io API: how Flotilla understands kinds it has no built-in
// knowledge of (InterpreterCustomization, InterpreterWebhookConfiguration). It is a group of its own, apart from policy.flotilla.io, because it
// configures the hub for a kind of object everywhere rather than choosing where some objects go; Karmada keeps
// its equivalent in config.karmada.io for the same reason.
// +kubebuilder:object:generate=true
// +groupName=config.flotilla.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the group and version of this API.
var GroupVersion = schema.GroupVersion{Group: "config.flotilla.io", Version: "v1alpha1"}

var (
	// SchemeBuilder registers this API's kinds with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds this API's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, &InterpreterCustomization{}, &InterpreterCustomizationList{},
		&InterpreterWebhookConfiguration{}, &InterpreterWebhookConfigurationList{})
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}

// KarmadaGroup is Karmada's configuration API group, which the hub also serves: its
// ResourceInterpreterCustomizations are mirrored onto InterpreterCustomizations, its
// ResourceInterpreterWebhookConfigurations onto InterpreterWebhookConfigurations.
const KarmadaGroup = "config.karmada.io"
