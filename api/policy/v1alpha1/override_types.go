package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// OverridePolicy changes the namespaced templates of its own namespace per target cluster. Field names and
// meanings follow Karmada's policy.karmada.io/v1alpha1 OverridePolicy.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=op,categories=flotilla
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type OverridePolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says which templates change and how.
	Spec OverrideSpec `json:"spec"`
}

// ClusterOverridePolicy is an OverridePolicy for cluster-scoped templates and templates of every namespace.
// ClusterOverridePolicies apply before OverridePolicies; each kind from the least to the most precise selector,
// then by name.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=cop,categories=flotilla
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterOverridePolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says which templates change and how.
	Spec OverrideSpec `json:"spec"`
}

// OverrideSpec selects templates and lists per-cluster changes to them.
type OverrideSpec struct {
	// ResourceSelectors select the templates to change. Omitted: every template the policy can see.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	ResourceSelectors []ResourceSelector `json:"resourceSelectors,omitempty"`

	// OverrideRules are applied in order; each changes the templates for the clusters it targets.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	OverrideRules []RuleWithCluster `json:"overrideRules,omitempty"`
}

// RuleWithCluster changes templates for the clusters targetCluster selects.
type RuleWithCluster struct {
	// TargetCluster selects the clusters this rule applies to. Omitted: every cluster.
	// +optional
	TargetCluster *ClusterAffinity `json:"targetCluster,omitempty"`

	// Overriders are applied in a fixed order: image, command, args, labels, annotations, field, plaintext.
	// +required
	Overriders Overriders `json:"overriders"`
}

// Overriders are the changes one rule makes.
type Overriders struct {
	// Plaintext applies JSON patch operations to the manifest.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	Plaintext []PlaintextOverrider `json:"plaintext,omitempty"`

	// ImageOverrider changes container images (or an image at a given path).
	// +optional
	// +kubebuilder:validation:MaxItems=64
	ImageOverrider []ImageOverrider `json:"imageOverrider,omitempty"`

	// CommandOverrider changes a container's command.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	CommandOverrider []CommandArgsOverrider `json:"commandOverrider,omitempty"`

	// ArgsOverrider changes a container's args.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	ArgsOverrider []CommandArgsOverrider `json:"argsOverrider,omitempty"`

	// LabelsOverrider changes the manifest's labels.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	LabelsOverrider []LabelAnnotationOverrider `json:"labelsOverrider,omitempty"`

	// AnnotationsOverrider changes the manifest's annotations.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	AnnotationsOverrider []LabelAnnotationOverrider `json:"annotationsOverrider,omitempty"`

	// FieldOverrider changes JSON or YAML held in a string field, such as a config file in a ConfigMap.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	FieldOverrider []FieldOverrider `json:"fieldOverrider,omitempty"`
}

// OverriderOperator is the operation an overrider performs.
// +kubebuilder:validation:Enum=add;remove;replace
type OverriderOperator string

const (
	OverriderOpAdd     OverriderOperator = "add"
	OverriderOpRemove  OverriderOperator = "remove"
	OverriderOpReplace OverriderOperator = "replace"
)

// PlaintextOverrider is one JSON patch operation. value is required for add and replace.
type PlaintextOverrider struct {
	// Path is a JSON pointer (RFC 6901) into the manifest, for example /spec/replicas.
	// +required
	// +kubebuilder:validation:Pattern=`^(/([^/~]|~[01])*)+$`
	Path string `json:"path"`

	// Operator is add, remove or replace.
	// +required
	Operator OverriderOperator `json:"operator"`

	// Value is the value to add or replace with.
	// +optional
	Value *apiextensionsv1.JSON `json:"value,omitempty"`
}

// ImageComponent is the part of an image reference an ImageOverrider changes.
// +kubebuilder:validation:Enum=Registry;Repository;Tag
type ImageComponent string

const (
	ImageRegistry   ImageComponent = "Registry"
	ImageRepository ImageComponent = "Repository"
	ImageTag        ImageComponent = "Tag"
)

// ImageOverrider changes one component of container images.
type ImageOverrider struct {
	// Predicate picks an image at a path; omitted: every container and init container image of a workload.
	// +optional
	Predicate *ImagePredicate `json:"predicate,omitempty"`

	// Component is Registry, Repository or Tag.
	// +required
	Component ImageComponent `json:"component"`

	// Operator is add, remove or replace.
	// +required
	Operator OverriderOperator `json:"operator"`

	// Value is the new component value for add and replace.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	Value string `json:"value,omitempty"`
}

// ImagePredicate picks the image at a path.
type ImagePredicate struct {
	// Path is a JSON pointer to the image field, for example /spec/template/spec/containers/0/image.
	// +required
	// +kubebuilder:validation:Pattern=`^(/([^/~]|~[01])*)+$`
	Path string `json:"path"`
}

// CommandArgsOperator is add or remove.
// +kubebuilder:validation:Enum=add;remove
type CommandArgsOperator string

// CommandArgsOverrider adds values to or removes values from one container's command or args.
type CommandArgsOverrider struct {
	// ContainerName is the container to change.
	// +required
	// +kubebuilder:validation:MinLength=1
	ContainerName string `json:"containerName"`

	// Operator is add or remove.
	// +required
	Operator CommandArgsOperator `json:"operator"`

	// Value lists the entries to add (appended) or remove.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	Value []string `json:"value,omitempty"`
}

// LabelAnnotationOverrider adds, removes or replaces labels or annotations.
type LabelAnnotationOverrider struct {
	// Operator is add, remove or replace.
	// +required
	Operator OverriderOperator `json:"operator"`

	// Value holds the keys (and for add and replace, values) to change.
	// +optional
	Value map[string]string `json:"value,omitempty"`
}

// FieldOverrider changes the JSON or YAML held in one string field. json and yaml are mutually exclusive.
// +kubebuilder:validation:XValidation:rule="!(has(self.json) && has(self.yaml))",message="fieldOverrider json and yaml are mutually exclusive"
// +kubebuilder:validation:XValidation:rule="has(self.json) || has(self.yaml)",message="fieldOverrider needs json or yaml operations"
type FieldOverrider struct {
	// FieldPath is a JSON pointer to the string field, for example /data/config.yaml.
	// +required
	// +kubebuilder:validation:Pattern=`^(/([^/~]|~[01])*)+$`
	FieldPath string `json:"fieldPath"`

	// JSON operations on the field parsed as JSON.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	JSON []JSONPatchOperation `json:"json,omitempty"`

	// YAML operations on the field parsed as YAML.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	YAML []JSONPatchOperation `json:"yaml,omitempty"`
}

// JSONPatchOperation is one patch operation inside a field's JSON or YAML. value is required for add and replace.
type JSONPatchOperation struct {
	// SubPath is a JSON pointer inside the field's document, for example /server/port.
	// +required
	// +kubebuilder:validation:Pattern=`^(/([^/~]|~[01])*)+$`
	SubPath string `json:"subPath"`

	// Operator is add, remove or replace.
	// +required
	Operator OverriderOperator `json:"operator"`

	// Value is the value to add or replace with.
	// +optional
	Value *apiextensionsv1.JSON `json:"value,omitempty"`
}

// OverridePolicyList is a list of OverridePolicies.
// +kubebuilder:object:root=true
type OverridePolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []OverridePolicy `json:"items"`
}

// ClusterOverridePolicyList is a list of ClusterOverridePolicies.
// +kubebuilder:object:root=true
type ClusterOverridePolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterOverridePolicy `json:"items"`
}
