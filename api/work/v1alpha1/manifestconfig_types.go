package v1alpha1

// Per-manifest configuration of a Work, and what happens to its member objects when it is deleted. Works the
// hub renders from templates set neither: their manifests are applied by Flotilla's server-side apply and
// deleted (as far as "no deletion without intent" allows) with the Work. Works written for OCM ManifestWorks
// (internal/mirror) carry what the ManifestWork says.

// UpdateStrategyType says how the executor writes a manifest's object into the member.
// +kubebuilder:validation:Enum=ServerSideApply;Update;CreateOnly;ReadOnly
type UpdateStrategyType string

const (
	// UpdateServerSideApply applies the manifest by server-side apply: Flotilla's normal path (the default).
	UpdateServerSideApply UpdateStrategyType = "ServerSideApply"
	// UpdateUpdate creates the object, and afterwards replaces it with the manifest by a plain update: fields
	// the manifest leaves out are reset, whoever set them.
	UpdateUpdate UpdateStrategyType = "Update"
	// UpdateCreateOnly creates the object when it is missing and never writes it again: changes made in the
	// member stay, and so does a manifest change.
	UpdateCreateOnly UpdateStrategyType = "CreateOnly"
	// UpdateReadOnly never writes the object, nor deletes or releases it: the executor only reads it, for its
	// status, health and feedback. A missing object is reported as not applied.
	UpdateReadOnly UpdateStrategyType = "ReadOnly"
)

// FeedbackRuleType says which status fields a feedback rule returns.
// +kubebuilder:validation:Enum=WellKnownStatus;JSONPaths
type FeedbackRuleType string

const (
	// FeedbackWellKnownStatus returns the well-known status fields of the object's kind (WellKnownFeedback);
	// a kind without any returns nothing and says so in the StatusFeedbackSynced condition.
	FeedbackWellKnownStatus FeedbackRuleType = "WellKnownStatus"
	// FeedbackJSONPaths returns the fields its jsonPaths name.
	FeedbackJSONPaths FeedbackRuleType = "JSONPaths"
)

// ManifestConfig configures the manifests of a Work that its resourceIdentifier selects.
type ManifestConfig struct {
	// ResourceIdentifier selects the manifest by its object's group, resource, namespace and name. A
	// selector that matches no manifest has no effect.
	// +required
	ResourceIdentifier ResourceSelector `json:"resourceIdentifier"`

	// UpdateStrategy says how the object is written into the member. Omitted: ServerSideApply, forced, as
	// Flotilla applies every manifest.
	// +optional
	UpdateStrategy *UpdateStrategy `json:"updateStrategy,omitempty"`

	// FeedbackRules name the status fields returned in the manifest's status (feedback). Omitted: none.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	FeedbackRules []FeedbackRule `json:"feedbackRules,omitempty"`
}

// ResourceSelector names one member object of a Work.
type ResourceSelector struct {
	// Group of the object; empty for the core group.
	// +optional
	Group string `json:"group,omitempty"`

	// Resource is the plural resource name, e.g. deployments.
	// +required
	// +kubebuilder:validation:MinLength=1
	Resource string `json:"resource"`

	// Namespace of the object; empty for a cluster-scoped object.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Name of the object.
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// UpdateStrategy says how a manifest's object is written into the member.
// +kubebuilder:validation:XValidation:rule="!has(self.serverSideApply) || self.type == 'ServerSideApply'",message="serverSideApply is only for type ServerSideApply"
type UpdateStrategy struct {
	// Type is ServerSideApply, Update, CreateOnly or ReadOnly.
	// +required
	Type UpdateStrategyType `json:"type"`

	// ServerSideApply tunes a ServerSideApply strategy.
	// +optional
	ServerSideApply *ServerSideApplyConfig `json:"serverSideApply,omitempty"`
}

// ServerSideApplyConfig tunes how a manifest is applied by server-side apply.
type ServerSideApplyConfig struct {
	// Force takes fields over from other field managers in the member. Default true (Flotilla's normal
	// apply); false reports a conflict (reason ApplyConflict) instead of taking a field another manager owns.
	// +optional
	Force *bool `json:"force,omitempty"`

	// FieldManager is the field manager of the apply in the member. Default flotilla; another must start
	// with "flotilla-" (flotilla-retained is the executor's own and is refused).
	// +optional
	// +kubebuilder:validation:Pattern=`^flotilla(-[a-z0-9.-]+)?$`
	// +kubebuilder:validation:XValidation:rule="self != 'flotilla-retained'",message="flotilla-retained is the executor's own field manager"
	// +kubebuilder:validation:MaxLength=128
	FieldManager string `json:"fieldManager,omitempty"`
}

// FeedbackRule names status fields of a manifest's object to return in its status.
// +kubebuilder:validation:XValidation:rule="self.type != 'JSONPaths' || (has(self.jsonPaths) && size(self.jsonPaths) > 0)",message="a JSONPaths rule needs jsonPaths"
type FeedbackRule struct {
	// Type is WellKnownStatus or JSONPaths.
	// +required
	Type FeedbackRuleType `json:"type"`

	// JSONPaths name the fields of a JSONPaths rule.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	JSONPaths []JSONPath `json:"jsonPaths,omitempty"`
}

// JSONPath names one field of an object.
type JSONPath struct {
	// Name is the feedback value's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// Path is a kubectl JSONPath under the object's status, as OCM's, e.g. .readyReplicas or
	// .conditions[?(@.type=="Available")].status. Nothing outside the status is reachable: feedback
	// returns no spec, data or secret of a member object. A path to a missing field returns nothing; one to
	// a list or an object returns its JSON (at most 1 KiB).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Path string `json:"path"`
}

// DeletePropagationPolicy says what becomes of a Work's member objects when it lets go of them.
// +kubebuilder:validation:Enum=Delete;Orphan;SelectivelyOrphan
type DeletePropagationPolicy string

const (
	// DeletePropagationDelete deletes the objects Flotilla may delete (the default: see deletable).
	DeletePropagationDelete DeletePropagationPolicy = "Delete"
	// DeletePropagationOrphan keeps every object, released (Flotilla's labels and annotations removed), as
	// preserveResourcesOnDeletion does.
	DeletePropagationOrphan DeletePropagationPolicy = "Orphan"
	// DeletePropagationSelectivelyOrphan keeps, released, the objects orphaningRules name, and deletes the
	// others as Delete does.
	DeletePropagationSelectivelyOrphan DeletePropagationPolicy = "SelectivelyOrphan"
)

// DeleteOption says what becomes of a Work's member objects when the Work is deleted or drops their
// manifests. It can only keep more than preserveResourcesOnDeletion and Flotilla's own rules keep (objects
// it adopted; Namespaces, CRDs and PVCs without the deletion-policy opt-in), never delete more.
// +kubebuilder:validation:XValidation:rule="self.propagationPolicy == 'SelectivelyOrphan' || !has(self.orphaningRules)",message="orphaningRules are only for propagationPolicy SelectivelyOrphan"
type DeleteOption struct {
	// PropagationPolicy is Delete (the default), Orphan or SelectivelyOrphan.
	// +optional
	// +kubebuilder:default=Delete
	PropagationPolicy DeletePropagationPolicy `json:"propagationPolicy,omitempty"`

	// OrphaningRules name the objects a SelectivelyOrphan policy keeps.
	// +optional
	// +kubebuilder:validation:MaxItems=100
	OrphaningRules []ResourceSelector `json:"orphaningRules,omitempty"`
}

// FeedbackValueType is the type of a feedback value.
// +kubebuilder:validation:Enum=Integer;String;Boolean;JsonRaw
type FeedbackValueType string

const (
	FeedbackInteger FeedbackValueType = "Integer"
	FeedbackString  FeedbackValueType = "String"
	FeedbackBoolean FeedbackValueType = "Boolean"
	FeedbackJSONRaw FeedbackValueType = "JsonRaw"
)

// FeedbackValue is one status field of a manifest's object, as a feedback rule named it.
type FeedbackValue struct {
	// Name is the rule's name of the field.
	// +required
	Name string `json:"name"`

	// Value is the field's value.
	// +required
	Value FieldValue `json:"fieldValue"`
}

// FieldValue is a status field's value: one of integer, string, boolean or, for a list or an object, its
// JSON.
type FieldValue struct {
	// Type says which of the other fields is set.
	// +required
	Type FeedbackValueType `json:"type"`

	// Integer is an integer value.
	// +optional
	Integer *int64 `json:"integer,omitempty"`

	// String is a string value.
	// +optional
	String *string `json:"string,omitempty"`

	// Boolean is a boolean value.
	// +optional
	Boolean *bool `json:"boolean,omitempty"`

	// JSONRaw is a list or an object as JSON.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	JSONRaw *string `json:"jsonRaw,omitempty"`
}

// ManifestConditionFeedbackSynced on a manifest status with feedback rules is True when every rule could be
// evaluated, False with the reason otherwise (a kind with no well-known status, a bad path).
const ManifestConditionFeedbackSynced = "StatusFeedbackSynced"

// WellKnownFeedback are the status fields a WellKnownStatus feedback rule returns, by group/kind: those OCM
// documents for Deployments, Jobs and Pods (paths under the status, as every feedback path).
var WellKnownFeedback = map[string][]JSONPath{
	"apps/Deployment": {
		{Name: "ReadyReplicas", Path: ".readyReplicas"},
		{Name: "Replicas", Path: ".replicas"},
		{Name: "AvailableReplicas", Path: ".availableReplicas"},
	},
	"batch/Job": {
		{Name: "JobComplete", Path: `.conditions[?(@.type=="Complete")].status`},
		{Name: "JobSucceeded", Path: ".succeeded"},
	},
	"/Pod": {
		{Name: "PodReady", Path: `.conditions[?(@.type=="Ready")].status`},
		{Name: "PodPhase", Path: ".phase"},
	},
}

// Selects says whether s names the object of group, resource, namespace and name.
func (s ResourceSelector) Selects(group, resource, namespace, name string) bool {
	return s.Group == group && s.Resource == resource && s.Namespace == namespace && s.Name == name
}

// ManifestConfig returns the configuration of the manifest whose object has group, resource, namespace and
// name: the first that selects it, or nil.
func (s *WorkSpec) ManifestConfig(group, resource, namespace, name string) *ManifestConfig {
	for i := range s.ManifestConfigs {
		if s.ManifestConfigs[i].ResourceIdentifier.Selects(group, resource, namespace, name) {
			return &s.ManifestConfigs[i]
		}
	}
	return nil
}

// Orphans says whether the Work's deleteOption keeps the member object of group, resource, namespace and
// name when the Work is deleted or drops its manifest. (preserveResourcesOnDeletion, which keeps every object
// of a deleted Work but not those it drops, is the executor's to add.)
func (s *WorkSpec) Orphans(group, resource, namespace, name string) bool {
	if s.DeleteOption == nil {
		return false
	}
	switch s.DeleteOption.PropagationPolicy {
	case DeletePropagationOrphan:
		return true
	case DeletePropagationSelectivelyOrphan:
		for _, r := range s.DeleteOption.OrphaningRules {
			if r.Selects(group, resource, namespace, name) {
				return true
			}
		}
	}
	return false
}
