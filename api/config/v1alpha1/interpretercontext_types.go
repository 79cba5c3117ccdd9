package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// The wire types of Karmada's resource interpreter webhook protocol, which Flotilla speaks with the webhooks
// of an InterpreterWebhookConfiguration: the hub POSTs a ResourceInterpreterContext holding a request, the
// webhook answers with one holding the response. apiVersion and kind are Karmada's, so that a webhook built
// for Karmada answers unchanged.

// InterpreterContextAPIVersion and InterpreterContextKind are the apiVersion and kind of the context.
const (
	InterpreterContextAPIVersion = KarmadaGroup + "/v1alpha1"
	InterpreterContextKind       = "ResourceInterpreterContext"
)

// ResourceInterpreterContext is one call of a webhook: the request the hub sends, or the response it reads.
type ResourceInterpreterContext struct {
	metav1.TypeMeta `json:",inline"`
	// Request is what the hub asks.
	// +optional
	Request *ResourceInterpreterRequest `json:"request,omitempty"`
	// Response is the webhook's answer.
	// +optional
	Response *ResourceInterpreterResponse `json:"response,omitempty"`
}

// ResourceInterpreterRequest is one question about one object.
type ResourceInterpreterRequest struct {
	// UID identifies the call; the response must carry it back.
	UID types.UID `json:"uid"`
	// Kind is the object's group, version and kind.
	Kind metav1.GroupVersionKind `json:"kind"`
	// Name and Namespace are the object's.
	Name string `json:"name"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Operation is the question.
	Operation InterpreterOperation `json:"operation"`
	// Object is the object asked about: the template (InterpretReplica, InterpretDependency,
	// AggregateStatus), a cluster's manifest (ReviseReplica), or a cluster's manifest holding the status its
	// member reported (InterpretStatus, InterpretHealth).
	// +optional
	Object runtime.RawExtension `json:"object,omitempty"`
	// ObservedObject is the member's object, which Karmada sends with Retain; Flotilla does not ask Retain
	// and never sets it.
	// +optional
	ObservedObject *runtime.RawExtension `json:"observedObject,omitempty"`
	// DesiredReplicas is sent with ReviseReplica: the cluster's share of the replicas.
	// +optional
	DesiredReplicas *int32 `json:"replicas,omitempty"`
	// AggregatedStatus is sent with AggregateStatus: one item per cluster that reported a status.
	// +optional
	AggregatedStatus []workv1alpha1.AggregatedStatusItem `json:"aggregatedStatus,omitempty"`
}

// ResourceInterpreterResponse is a webhook's answer.
type ResourceInterpreterResponse struct {
	// UID is the request's.
	UID types.UID `json:"uid"`
	// Successful is false when the webhook could not answer; Status says why.
	Successful bool `json:"successful"`
	// Status says why a call was not successful.
	// +optional
	Status *RequestStatus `json:"status,omitempty"`
	// Patch is a JSON patch (RFC 6902) of the request's object: to the revised manifest (ReviseReplica), or
	// to the template with its aggregated status (AggregateStatus; only the status is kept).
	// +optional
	Patch []byte `json:"patch,omitempty"`
	// PatchType is JSONPatch, the only type.
	// +optional
	PatchType *PatchType `json:"patchType,omitempty"`
	// ReplicaRequirements are what one replica needs (InterpretReplica).
	// +optional
	ReplicaRequirements *workv1alpha1.ReplicaRequirements `json:"replicaRequirements,omitempty"`
	// Replicas is the object's replica count (InterpretReplica).
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// Dependencies are the objects the object needs in the same clusters (InterpretDependency).
	// +optional
	Dependencies []DependentObjectReference `json:"dependencies,omitempty"`
	// RawStatus is the status to report for a member object (InterpretStatus).
	// +optional
	RawStatus *runtime.RawExtension `json:"rawStatus,omitempty"`
	// Healthy says whether a member object is healthy (InterpretHealth).
	// +optional
	Healthy *bool `json:"healthy,omitempty"`
}

// RequestStatus says why a call was not successful.
type RequestStatus struct {
	// +optional
	Message string `json:"message,omitempty"`
	// Code is an HTTP status code.
	// +optional
	Code int32 `json:"code,omitempty"`
}

// PatchType is the type of a response's patch.
type PatchType string

// PatchTypeJSONPatch is RFC 6902's JSON patch.
const PatchTypeJSONPatch PatchType = "JSONPatch"

// DependentObjectReference names an object another one needs.
type DependentObjectReference struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Namespace is the dependency's; empty: the object's own.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}
