package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// InterpreterCustomization tells Flotilla how to understand one kind of object: how many replicas it has and
// what each needs (so it is divided and scheduled by capacity like a Deployment), how a divided count is
// written back, which fields its member copies keep, which part of its status is reported, how member
// statuses fold into the template's, whether it is healthy, and what it depends on. Each operation is
// optional; an operation left out keeps Flotilla's built-in rule for the kind. A customization overrides the
// customizations shipped in the binary for the same kind (Argo Rollouts' Rollout, OpenKruise's CloneSet).
// A customization of one version applies to the kind's other versions too (a template is read under the
// version the API server prefers), unless another customization names that version exactly. When several
// customizations match a kind equally, the one whose name sorts first is used.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=ic
// +kubebuilder:printcolumn:name="API-VERSION",type=string,JSONPath=`.spec.target.apiVersion`
// +kubebuilder:printcolumn:name="KIND",type=string,JSONPath=`.spec.target.kind`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type InterpreterCustomization struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says which kind is customized and how.
	Spec InterpreterCustomizationSpec `json:"spec"`
}

// InterpreterCustomizationSpec is the kind a customization targets and its operations.
type InterpreterCustomizationSpec struct {
	// Target is the kind of object customized.
	Target CustomizationTarget `json:"target"`
	// Customizations are the operations, each optional.
	Customizations CustomizationRules `json:"customizations"`
}

// CustomizationTarget names a kind of object by its apiVersion and kind, as templates on the hub are written.
type CustomizationTarget struct {
	// APIVersion is the group/version of the kind, for example apps.kruise.io/v1alpha1.
	// +kubebuilder:validation:MinLength=1
	APIVersion string `json:"apiVersion"`
	// Kind is the kind, for example CloneSet.
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`
}

// CustomizationRules are the operations of a customization. Every expression reads the variable `object`
// (the object the operation is about, as JSON: object.spec.replicas) and may use the Kubernetes CEL
// libraries the API server offers (quantities, lists, regular expressions, URLs). Expressions are compiled
// and type-checked when the customization is written; one that does not compile is refused with the
// compiler's message and position. At run time an evaluation is bounded in cost; one that fails or runs out
// of budget marks the bindings of the kind with the Interpreted condition naming this customization, and
// Flotilla goes on with the others.
type CustomizationRules struct {
	// ReplicaResource says how many replicas an object has and what one replica needs.
	// Input: `object`, the template on the hub.
	// Output: a map {"replicas": int, "requests": {resource name: quantity string}}; requests is optional
	// (for example {"replicas": object.spec.replicas, "requests": {"cpu": "100m"}}), and may be a list of
	// such maps, which are summed (one per container:
	// object.spec.template.spec.containers.map(c, c.?resources.?requests.orValue({}))).
	// A kind with this operation is divided over clusters and scheduled by capacity like a Deployment.
	// +optional
	ReplicaResource *Expression `json:"replicaResource,omitempty"`
	// ReplicaRevision says how a cluster's share of the replicas is written into its manifest.
	// Inputs: `object`, the manifest for the cluster; `replicas`, the cluster's share (int).
	// Output: a map from a dotted field path to the value to set there, for example
	// {"spec.replicas": replicas}.
	// Without it, a kind with replicaResource gets its share written to spec.replicas. A path naming the
	// object's apiVersion, kind, name or namespace fails the operation.
	// +optional
	ReplicaRevision *Expression `json:"replicaRevision,omitempty"`
	// Retention lists the fields whose values members own: they are left out of the manifest Flotilla
	// applies, so whoever sets them in the member (an autoscaler, a member controller) keeps them.
	// Input: `object`, the manifest for the cluster.
	// Output: a list of dotted field paths, for example ["spec.replicas"]; one naming the object's
	// apiVersion, kind, name or namespace fails the operation.
	// +optional
	Retention *Expression `json:"retention,omitempty"`
	// StatusReflection says which part of a member object's status is reported to the hub: the binding's
	// per-cluster status and the input of statusAggregation.
	// Input: `object`, the member object (its manifest with the status its member reported).
	// Output: a map, the status to report (for example {"readyReplicas": object.status.readyReplicas}).
	// Without it, the whole status is reported.
	// +optional
	StatusReflection *Expression `json:"statusReflection,omitempty"`
	// StatusAggregation says how the members' statuses fold into the template's status on the hub.
	// Inputs: `object`, the template; `statuses`, a list of {"clusterName": string, "status": map}, one per
	// cluster that reported a status.
	// Output: a map, the template's new status.
	// Without it, the template's status is left alone (native kinds keep their built-in sums).
	// +optional
	StatusAggregation *Expression `json:"statusAggregation,omitempty"`
	// HealthInterpretation says whether a member object is healthy.
	// Input: `object`, the member object (its manifest with the status its member reported).
	// Output: a bool, true when healthy.
	// Without it, the built-in rule for the kind applies (an object of a kind Flotilla does not know is
	// healthy once it exists).
	// +optional
	HealthInterpretation *Expression `json:"healthInterpretation,omitempty"`
	// DependencyInterpretation lists the objects an object needs in the same clusters, propagated with it
	// when its policy sets propagateDeps.
	// Input: `object`, the template on the hub.
	// Output: a list of {"apiVersion": string, "kind": string, "name": string}; the dependencies live in the
	// template's namespace.
	// +optional
	DependencyInterpretation *Expression `json:"dependencyInterpretation,omitempty"`
}

// Expression is one operation written in an expression language. Exactly one language is set.
type Expression struct {
	// CEL is the operation as a Common Expression Language expression
	// (https://github.com/google/cel-spec), compiled when the customization is written.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=10240
	CEL string `json:"cel"`
}

// InterpreterCustomizationList is a list of InterpreterCustomizations.
// +kubebuilder:object:root=true
type InterpreterCustomizationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []InterpreterCustomization `json:"items"`
}
