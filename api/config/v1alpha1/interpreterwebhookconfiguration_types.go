package v1alpha1

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// InterpreterWebhookConfiguration sends the interpreter's questions about some kinds to HTTPS webhooks that
// answer with Karmada's resource interpreter protocol (a ResourceInterpreterContext of config.karmada.io/v1alpha1,
// interpretercontext_types.go), so a webhook written for Karmada's ResourceInterpreterWebhookConfiguration
// serves Flotilla unchanged. Karmada's kind, written through config.karmada.io, is mirrored onto this one.
//
// Which interpreter answers an operation for a kind, first that has it: an InterpreterCustomization (a
// user's), then a webhook, then a customization shipped in the binary, then Flotilla's built-in rule —
// Karmada's order (declarative customization, webhook, bundled third-party, native). Among webhooks, the
// first matching webhook of the configuration whose name sorts first answers.
//
// The hub calls the webhooks (member agents never do): InterpretReplica and InterpretDependency with the
// template, ReviseReplica with a cluster's manifest, InterpretStatus and InterpretHealth with a cluster's
// manifest holding the status its member reported (so pull clusters' objects are judged too), and
// AggregateStatus with the template and the clusters' statuses. Retain is not asked: it needs the member's
// object, which only the member's executor sees; an InterpreterCustomization's retention serves instead.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type InterpreterWebhookConfiguration struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Webhooks are the webhooks, each with the kinds and operations it answers.
	// +kubebuilder:validation:MinItems=1
	// +listType=map
	// +listMapKey=name
	Webhooks []InterpreterWebhook `json:"webhooks"`
}

// InterpreterWebhook is one webhook, the kinds and operations it answers, and how it is called.
type InterpreterWebhook struct {
	// Name names the webhook (a qualified name, as workloads.example.io), unique in its configuration; errors
	// on bindings name it.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// ClientConfig says where the webhook is: a URL (https://host:port/path; https only), or a Service
	// (namespace, name, port, path) on the hub, called at https://NAME.NAMESPACE.svc:PORT/PATH, its cluster DNS
	// name, which a hub running in a cluster resolves and which the serving certificate must name. When both
	// are set the Service is used (Karmada's rule). caBundle holds the PEM certificates that verify the
	// webhook's serving certificate; empty: the hub's system roots.
	ClientConfig admissionregistrationv1.WebhookClientConfig `json:"clientConfig"`
	// Rules are the kinds and operations the webhook answers; it answers an operation on a kind when any rule
	// matches both. An empty list matches nothing.
	// +optional
	Rules []RuleWithOperations `json:"rules,omitempty"`
	// TimeoutSeconds bounds each call, from 1 to 30 seconds; past it the call has failed and failurePolicy
	// decides. Default 10.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=30
	// +kubebuilder:default=10
	// +optional
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`
	// InterpreterContextVersions are the versions of ResourceInterpreterContext the webhook understands, in
	// order of preference; Flotilla speaks v1alpha1, which the list must hold.
	// +kubebuilder:validation:MinItems=1
	InterpreterContextVersions []string `json:"interpreterContextVersions"`
	// FailurePolicy says what a failed call means (unreachable, timed out, an HTTP error, an answer larger
	// than 3 MiB, not a ResourceInterpreterContext, for another uid, or not successful): Fail (the default,
	// and Karmada's only behaviour) fails the operation, and the binding's Interpreted condition names the
	// webhook and the error while the binding keeps what the last good answer gave it; Ignore lets the next
	// interpreter answer (a shipped customization or the built-in rule). A successful answer that lacks what
	// the operation needs (no replicas, a patch that does not apply) fails whatever the policy. A Flotilla
	// addition: Karmada's kind has no such field.
	// +kubebuilder:validation:Enum=Fail;Ignore
	// +kubebuilder:default=Fail
	// +optional
	FailurePolicy *FailurePolicy `json:"failurePolicy,omitempty"`
}

// FailurePolicy says what a failed webhook call means.
type FailurePolicy string

const (
	// FailurePolicyFail fails the operation.
	FailurePolicyFail FailurePolicy = "Fail"
	// FailurePolicyIgnore lets the next interpreter answer.
	FailurePolicyIgnore FailurePolicy = "Ignore"
)

// RuleWithOperations is a set of operations on a set of kinds.
type RuleWithOperations struct {
	// Operations are Karmada's interpreter operations: InterpretReplica, ReviseReplica, Retain (accepted,
	// never asked), AggregateStatus, InterpretStatus, InterpretHealth, InterpretDependency, or "*" (all,
	// alone in the list).
	// +kubebuilder:validation:MinItems=1
	Operations []InterpreterOperation `json:"operations"`
	// APIGroups are the kinds' API groups ("" is the core group); "*", alone, is every group.
	// +kubebuilder:validation:MinItems=1
	APIGroups []string `json:"apiGroups"`
	// APIVersions are the kinds' versions; "*", alone, is every version.
	// +kubebuilder:validation:MinItems=1
	APIVersions []string `json:"apiVersions"`
	// Kinds are the kinds (Deployment, not deployments); "*", alone, is every kind.
	// +kubebuilder:validation:MinItems=1
	Kinds []string `json:"kinds"`
}

// InterpreterOperation is one of Karmada's interpreter operations.
type InterpreterOperation string

// The operations a webhook may answer. Karmada's InterpretComponent, ReviseComponents and Prune are not
// asked by Flotilla.
const (
	InterpreterOperationAll                 InterpreterOperation = "*"
	InterpreterOperationInterpretReplica    InterpreterOperation = "InterpretReplica"
	InterpreterOperationReviseReplica       InterpreterOperation = "ReviseReplica"
	InterpreterOperationRetain              InterpreterOperation = "Retain"
	InterpreterOperationAggregateStatus     InterpreterOperation = "AggregateStatus"
	InterpreterOperationInterpretStatus     InterpreterOperation = "InterpretStatus"
	InterpreterOperationInterpretHealth     InterpreterOperation = "InterpretHealth"
	InterpreterOperationInterpretDependency InterpreterOperation = "InterpretDependency"
)

// InterpreterWebhookConfigurationList is a list of InterpreterWebhookConfigurations.
// +kubebuilder:object:root=true
type InterpreterWebhookConfigurationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []InterpreterWebhookConfiguration `json:"items"`
}
