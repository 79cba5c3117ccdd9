package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// ManifestWork holds manifests for the cluster its namespace is named after. Mirrored onto the work.flotilla.io
// Work of the same name in the cluster's Flotilla namespace (flotilla-cluster-<cluster>); the Work's status is
// copied back in OCM's words.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=mw
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Applied",type=string,JSONPath=`.status.conditions[?(@.type=="Applied")].status`
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ManifestWork struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec holds the manifests and how they are applied and deleted.
	// +required
	Spec ManifestWorkSpec `json:"spec"`

	// Status is what the cluster did with them.
	// +optional
	Status ManifestWorkStatus `json:"status,omitempty"`
}

// ManifestWorkSpec holds the manifests for one cluster.
type ManifestWorkSpec struct {
	// Workload holds the manifests.
	// +optional
	Workload ManifestsTemplate `json:"workload,omitempty"`

	// DeleteOption says what becomes of the cluster's objects when the ManifestWork is deleted. Omitted:
	// Foreground (they are deleted, as far as Flotilla deletes anything: not objects it adopted, nor
	// Namespaces, CRDs or PVCs without its deletion-policy opt-in).
	// +optional
	DeleteOption *DeleteOption `json:"deleteOption,omitempty"`

	// ManifestConfigs configure single manifests.
	// +optional
	// +kubebuilder:validation:MaxItems=100
	ManifestConfigs []ManifestConfigOption `json:"manifestConfigs,omitempty"`
}

// ManifestsTemplate holds the manifests.
type ManifestsTemplate struct {
	// Manifests are complete Kubernetes objects.
	// +optional
	Manifests []workv1alpha1.Manifest `json:"manifests,omitempty"`
}

// DeletePropagationPolicyType is Foreground, Orphan or SelectivelyOrphan.
// +kubebuilder:validation:Enum=Foreground;Orphan;SelectivelyOrphan
type DeletePropagationPolicyType string

// Delete propagation policies.
const (
	DeletePropagationForeground        DeletePropagationPolicyType = "Foreground"
	DeletePropagationOrphan            DeletePropagationPolicyType = "Orphan"
	DeletePropagationSelectivelyOrphan DeletePropagationPolicyType = "SelectivelyOrphan"
)

// DeleteOption says what becomes of the cluster's objects when the ManifestWork is deleted.
type DeleteOption struct {
	// PropagationPolicy: Foreground deletes them, Orphan keeps them all, SelectivelyOrphan keeps those
	// selectivelyOrphans names.
	// +optional
	// +kubebuilder:default=Foreground
	PropagationPolicy DeletePropagationPolicyType `json:"propagationPolicy"`

	// SelectivelyOrphan names the objects a SelectivelyOrphan policy keeps.
	// +optional
	SelectivelyOrphan *SelectivelyOrphan `json:"selectivelyOrphans,omitempty"`
}

// SelectivelyOrphan names objects to keep.
type SelectivelyOrphan struct {
	// OrphaningRules each name one object.
	// +optional
	// +kubebuilder:validation:MaxItems=100
	OrphaningRules []ResourceIdentifier `json:"orphaningRules,omitempty"`
}

// ResourceIdentifier names one object of the ManifestWork.
type ResourceIdentifier struct {
	// Group of the object; empty for the core group.
	// +optional
	Group string `json:"group"`

	// Resource is the plural resource name.
	// +required
	Resource string `json:"resource"`

	// Name of the object.
	// +required
	Name string `json:"name"`

	// Namespace of the object; empty for a cluster-scoped object.
	// +optional
	Namespace string `json:"namespace"`
}

// ManifestConfigOption configures the manifest resourceIdentifier names.
type ManifestConfigOption struct {
	// ResourceIdentifier names the manifest's object.
	// +required
	ResourceIdentifier ResourceIdentifier `json:"resourceIdentifier"`

	// FeedbackRules name the status fields returned in status.resourceStatus.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	FeedbackRules []FeedbackRule `json:"feedbackRules,omitempty"`

	// UpdateStrategy says how the object is written. Omitted: Flotilla's forced server-side apply (OCM
	// would use Update).
	// +optional
	UpdateStrategy *UpdateStrategy `json:"updateStrategy,omitempty"`
}

// UpdateStrategyType is Update, CreateOnly, ServerSideApply or ReadOnly.
// +kubebuilder:validation:Enum=Update;CreateOnly;ServerSideApply;ReadOnly
type UpdateStrategyType string

// UpdateStrategy says how an object is written.
type UpdateStrategy struct {
	// Type: Update replaces the object by an update call; CreateOnly creates it and never writes it again;
	// ServerSideApply applies it; ReadOnly only reads it (for feedback).
	// +kubebuilder:default=Update
	// +required
	Type UpdateStrategyType `json:"type,omitempty"`

	// ServerSideApply tunes a ServerSideApply strategy.
	// +optional
	ServerSideApply *ServerSideApplyConfig `json:"serverSideApply,omitempty"`
}

// ServerSideApplyConfig tunes a ServerSideApply strategy.
type ServerSideApplyConfig struct {
	// Force takes over fields other managers own; without it such a field is a conflict.
	// +optional
	Force bool `json:"force"`

	// FieldManager is work-agent or starts with it; Flotilla applies as flotilla, or flotilla-SUFFIX for
	// work-agent-SUFFIX.
	// +optional
	// +kubebuilder:default=work-agent
	// +kubebuilder:validation:Pattern=`^work-agent`
	FieldManager string `json:"fieldManager,omitempty"`
}

// FeedbackType is WellKnownStatus or JSONPaths.
// +kubebuilder:validation:Enum=WellKnownStatus;JSONPaths
type FeedbackType string

// FeedbackRule names status fields to return.
type FeedbackRule struct {
	// Type: WellKnownStatus returns the kind's well-known fields (Deployments, Jobs, Pods); JSONPaths those
	// jsonPaths names.
	// +required
	Type FeedbackType `json:"type"`

	// JsonPaths name the fields of a JSONPaths rule.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	JsonPaths []JsonPath `json:"jsonPaths,omitempty"` //nolint:revive // OCM's name
}

// JsonPath names one field.
type JsonPath struct { //nolint:revive // OCM's name
	// Name of the value.
	// +required
	Name string `json:"name"`

	// Path is a kubectl JSONPath under the object's status, e.g. .readyReplicas; nothing outside the status
	// is reachable.
	// +required
	Path string `json:"path"`
}

// ManifestWorkStatus is what the cluster did with the manifests.
type ManifestWorkStatus struct {
	// Conditions: Applied (every manifest applied), Available (every object there and healthy), Degraded
	// (some object unhealthy).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ResourceStatus is each manifest's state.
	// +optional
	ResourceStatus ManifestResourceStatus `json:"resourceStatus,omitempty"`
}

// ManifestResourceStatus lists the manifests' states.
type ManifestResourceStatus struct {
	// Manifests are the manifests' states, by ordinal.
	// +optional
	Manifests []ManifestCondition `json:"manifests,omitempty"`
}

// ManifestCondition is one manifest's state.
type ManifestCondition struct {
	// ResourceMeta names the manifest and its object.
	// +required
	ResourceMeta ManifestResourceMeta `json:"resourceMeta"`

	// StatusFeedbacks are the values the manifest's feedback rules return.
	// +optional
	StatusFeedbacks StatusFeedbackResult `json:"statusFeedback,omitempty"`

	// Conditions: Applied, Available, StatusFeedbackSynced.
	// +optional
	Conditions []metav1.Condition `json:"conditions"`
}

// ManifestResourceMeta names a manifest and its object.
type ManifestResourceMeta struct {
	// Ordinal is the manifest's index in spec.workload.manifests.
	// +required
	Ordinal int32 `json:"ordinal"`
	// Group of the object.
	// +optional
	Group string `json:"group"`
	// Version of the object.
	// +optional
	Version string `json:"version"`
	// Kind of the object.
	// +optional
	Kind string `json:"kind"`
	// Resource of the object.
	// +optional
	Resource string `json:"resource"`
	// Name of the object.
	// +optional
	Name string `json:"name"`
	// Namespace of the object.
	// +optional
	Namespace string `json:"namespace"`
}

// StatusFeedbackResult holds feedback values.
type StatusFeedbackResult struct {
	// Values are the fields returned.
	// +optional
	// +listType=map
	// +listMapKey=name
	Values []workv1alpha1.FeedbackValue `json:"values,omitempty"`
}

// ManifestWorkList is a list of ManifestWorks.
// +kubebuilder:object:root=true
type ManifestWorkList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ManifestWork `json:"items"`
}
