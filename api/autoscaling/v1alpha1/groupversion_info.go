// Package v1alpha1 holds the autoscaling.flotilla.io API: scaling a template's replicas across the fleet by
// its pods' metrics in every member (FederatedHPA) and by the clock (CronFederatedHPA). The fields are
// Karmada's, so its YAML works after changing the apiVersion.
// +kubebuilder:object:generate=true
// +groupName=autoscaling.flotilla.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the group and version of this API.
var GroupVersion = schema.GroupVersion{Group: "autoscaling.flotilla.io", Version: "v1alpha1"}

var (
	// SchemeBuilder registers this API's kinds with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds this API's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion,
		&FederatedHPA{}, &FederatedHPAList{},
		&CronFederatedHPA{}, &CronFederatedHPAList{},
	)
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}

// KarmadaGroup is Karmada's autoscaling API group, which the hub also serves: its FederatedHPAs and
// CronFederatedHPAs are mirrored onto this group's.
const KarmadaGroup = "autoscaling.karmada.io"
