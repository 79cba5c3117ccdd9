package v1alpha1

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// Condition types of Works.
const (
	// WorkConditionApplied is True once every manifest was applied in the member.
	WorkConditionApplied = "Applied"
	// WorkConditionAvailable is True once every manifest is healthy in the member.
	WorkConditionAvailable = "Available"
	// WorkReasonDeleted on the Applied condition (False) of a deleted Work of a cluster being deregistered
	// with cluster.flotilla.io/unjoin: DeleteResources says its member objects were deleted (or, for a Work
	// that preserves them, kept). The executor keeps the Work's finalizer meanwhile, so its binding does not
	// write it again; once every Work of the cluster reports it, the hub's deregistration lets the Cluster go,
	// and the hub releases the Works.
	WorkReasonDeleted = "Deleted"
	// ManifestConditionObserved on a manifest status is True once the member's controllers observed the
	// object's current generation (or the object has no observedGeneration).
	ManifestConditionObserved = "Observed"
	// ManifestConditionStatusReflected on a manifest status is False when the object's status was too large
	// to reflect whole and only a summary of it is shown; it is absent otherwise.
	ManifestConditionStatusReflected = "StatusReflected"
	// ManifestReasonApplying on a manifest's Applied condition (Unknown) lists the object before its first
	// apply: the executor records what it is about to apply before it applies it.
	ManifestReasonApplying = "Applying"
)

// Work holds the rendered manifests for one member cluster. It lives in the cluster's namespace,
// flotilla-cluster-<cluster>; the cluster's agent (Pull) or the hub (Push) applies it.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,categories=flotilla
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Applied",type=string,JSONPath=`.status.conditions[?(@.type=="Applied")].status`
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Work struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec holds the manifests to apply.
	Spec WorkSpec `json:"spec"`

	// Status is what the member did with them.
	// +optional
	Status WorkStatus `json:"status,omitempty"`
}

// WorkSpec holds the manifests for one cluster.
type WorkSpec struct {
	// Workload holds the manifests.
	// +optional
	Workload WorkloadTemplate `json:"workload,omitempty"`

	// SuspendDispatching true stops the manifests from being applied until it is unset.
	// +optional
	SuspendDispatching *bool `json:"suspendDispatching,omitempty"`

	// PreserveResourcesOnDeletion keeps the member objects when the Work is deleted.
	// +optional
	PreserveResourcesOnDeletion *bool `json:"preserveResourcesOnDeletion,omitempty"`

	// ConflictResolution says what happens when the member already has an object Flotilla did not create.
	// Default Abort.
	// +optional
	// +kubebuilder:default=Abort
	ConflictResolution policyv1alpha1.ConflictResolution `json:"conflictResolution,omitempty"`

	// ManifestConfigs configure single manifests: how each is written into the member (updateStrategy) and
	// which of its status fields are returned (feedbackRules). Omitted: every manifest is applied by forced
	// server-side apply and returns no feedback.
	// +optional
	// +kubebuilder:validation:MaxItems=100
	ManifestConfigs []ManifestConfig `json:"manifestConfigs,omitempty"`

	// DeleteOption says which member objects stay when the Work is deleted or drops their manifests.
	// Omitted: Delete.
	// +optional
	DeleteOption *DeleteOption `json:"deleteOption,omitempty"`
}

// WorkloadTemplate holds the manifests.
type WorkloadTemplate struct {
	// Manifests are complete Kubernetes objects, applied in dependency order (CRDs, then namespaces, then the
	// rest).
	// +optional
	Manifests []Manifest `json:"manifests,omitempty"`
}

// Manifest is one complete Kubernetes object.
// +kubebuilder:pruning:PreserveUnknownFields
// +kubebuilder:validation:EmbeddedResource
type Manifest struct {
	runtime.RawExtension `json:",inline"`
}

// WorkStatus is what the member did with the manifests.
type WorkStatus struct {
	// Conditions: Applied, Available.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ManifestStatuses report each manifest's state in the member.
	// +optional
	ManifestStatuses []ManifestStatus `json:"manifestStatuses,omitempty"`
}

// ManifestStatus is one manifest's state in the member.
type ManifestStatus struct {
	// Identifier says which manifest this is.
	// +required
	Identifier ResourceIdentifier `json:"identifier"`

	// Applied is true once the manifest was applied.
	// +optional
	Applied bool `json:"applied,omitempty"`

	// Conditions of applying this manifest, for example a conflict with an object Flotilla did not create.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Status is the object's status as reflected from the member.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	Status *runtime.RawExtension `json:"status,omitempty"`

	// Health is the object's health in the member.
	// +optional
	Health ResourceHealth `json:"health,omitempty"`

	// Unschedulable counts the object's pods that the member's scheduler found no node for.
	// +optional
	Unschedulable *UnschedulableReplicas `json:"unschedulable,omitempty"`

	// Feedback holds the status fields the manifest's feedbackRules return (spec.manifestConfigs).
	// +optional
	// +listType=map
	// +listMapKey=name
	Feedback []FeedbackValue `json:"feedback,omitempty"`
}

// UnschedulableReplicas counts a workload's pods that stay Pending because the member's scheduler found no
// node for them (condition PodScheduled=False, reason Unschedulable).
type UnschedulableReplicas struct {
	// Replicas is how many pods are unschedulable.
	// +required
	Replicas int32 `json:"replicas"`

	// Since is when the first of them became unschedulable.
	// +required
	Since metav1.Time `json:"since"`
}

// ResourceIdentifier identifies one manifest of a Work and the object it became.
type ResourceIdentifier struct {
	// Ordinal is the manifest's index in spec.workload.manifests.
	// +required
	// +kubebuilder:validation:Minimum=0
	Ordinal int `json:"ordinal"`

	// Group of the object; empty for the core group.
	// +optional
	Group string `json:"group,omitempty"`

	// Version of the object.
	// +required
	Version string `json:"version"`

	// Kind of the object.
	// +required
	Kind string `json:"kind"`

	// Resource is the plural resource name.
	// +optional
	Resource string `json:"resource,omitempty"`

	// Namespace of the object; empty for cluster-scoped objects.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Name of the object.
	// +required
	Name string `json:"name"`
}

// WorkList is a list of Works.
// +kubebuilder:object:root=true
type WorkList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Work `json:"items"`
}

// TemplateGeneration is the generation of the template the Work's first manifest was rendered from (the
// work.flotilla.io/template-generation annotation), or 0 when it is not known.
func (w *Work) TemplateGeneration() int64 {
	if len(w.Spec.Workload.Manifests) == 0 {
		return 0
	}
	var m struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(w.Spec.Workload.Manifests[0].Raw, &m); err != nil {
		return 0
	}
	g, _ := strconv.ParseInt(m.Metadata.Annotations[AnnotationTemplateGeneration], 10, 64)
	return g
}

// TemplateStatus is the member's report of the Work's template: its first manifest's status, or, for a
// Work whose manifests were expanded from the template (AnnotationExpanded on the first), every manifest's
// folded into one: applied and observed when all are, the worst health (Unhealthy, then Unknown), and a
// status {version, objects, appliedObjects, healthyObjects, health}. Nil before the member reported.
func (w *Work) TemplateStatus() *ManifestStatus {
	if len(w.Status.ManifestStatuses) == 0 {
		return nil
	}
	first := &w.Status.ManifestStatuses[0]
	var m struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	// Most Works are not expanded: a manifest that does not even mention the annotation is not decoded (the
	// API server stores it re-encoded, so the key is never escaped).
	if len(w.Spec.Workload.Manifests) == 0 || !bytes.Contains(w.Spec.Workload.Manifests[0].Raw, []byte(AnnotationExpanded)) ||
		json.Unmarshal(w.Spec.Workload.Manifests[0].Raw, &m) != nil || m.Metadata.Annotations[AnnotationExpanded] == "" {
		return first
	}
	out := &ManifestStatus{Identifier: first.Identifier, Applied: true, Health: ResourceHealthy}
	observed := true
	applied, healthy := 0, 0
	for _, ms := range w.Status.ManifestStatuses {
		if ms.Applied {
			applied++
		}
		switch ms.Health {
		case ResourceHealthy:
			healthy++
		case ResourceUnhealthy:
			out.Health = ResourceUnhealthy
		default:
			if out.Health == ResourceHealthy {
				out.Health = ResourceUnknown
			}
		}
		observed = observed && conditionTrue(ms.Conditions, ManifestConditionObserved)
	}
	n := len(w.Spec.Workload.Manifests)
	out.Applied = applied == n && len(w.Status.ManifestStatuses) == n
	if len(w.Status.ManifestStatuses) < n && out.Health == ResourceHealthy {
		out.Health = ResourceUnknown
	}
	if observed {
		out.Conditions = []metav1.Condition{{Type: ManifestConditionObserved, Status: metav1.ConditionTrue, Reason: "Observed",
			Message: "every object observed"}}
	}
	raw := fmt.Appendf(nil, `{"version":%q,"objects":%d,"appliedObjects":%d,"healthyObjects":%d,"health":%q}`,
		m.Metadata.Annotations[AnnotationExpandedVersion], n, applied, healthy, out.Health)
	out.Status = &runtime.RawExtension{Raw: raw}
	return out
}

func conditionTrue(conditions []metav1.Condition, t string) bool {
	for _, c := range conditions {
		if c.Type == t {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}
