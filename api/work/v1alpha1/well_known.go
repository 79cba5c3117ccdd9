package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Labels that protect a hub object from deletion: while either is set to DeletionProtectedAlways, the hub
// refuses to delete the object (a template, a policy, any object), and the refusal says which label to
// remove. The second is Karmada's name, honoured the same way so that a Karmada user's protected templates
// stay protected.
const (
	LabelDeletionProtected        = "flotilla.io/deletion-protected"
	LabelKarmadaDeletionProtected = "resourcetemplate.karmada.io/deletion-protected"
	DeletionProtectedAlways       = "Always"
)

// Labels and annotations Flotilla puts on the objects it manages.
const (
	// LabelBindingNamespace and LabelBindingName on a Work name the binding it was rendered from.
	LabelBindingNamespace = "work.flotilla.io/binding-namespace"
	LabelBindingName      = "work.flotilla.io/binding-name"
	// AnnotationBindingUID on a Work is the UID of the binding that wrote it. A binding deleted and created
	// again under the same name is another binding: the Works of the earlier one are not the new one's to
	// change or delete, and the hub's work sweeper releases them. A Work without it (written by an earlier
	// version) belongs to whichever binding its labels name.
	AnnotationBindingUID = "work.flotilla.io/binding-uid"

	// KeyPrefix starts every label and annotation key of Flotilla's on the objects it manages. A member
	// object Flotilla lets go of without deleting it (preserveResourcesOnDeletion, an unjoin that keeps
	// resources) loses every key with this prefix.
	KeyPrefix = "work.flotilla.io/"

	// LabelManagedBy on a member object says Flotilla applied it; AnnotationWork names the Work
	// (namespace/name) it came from. Both are for people and tools to read; neither proves anything.
	LabelManagedBy = "work.flotilla.io/managed-by"
	ManagedByValue = "flotilla"
	AnnotationWork = "work.flotilla.io/work"

	// AnnotationOwner on a member object is the executor's proof that it marked the object itself:
	// "HUB/DIGEST", where HUB is the hub's ID (the UID of the hub's kube-system namespace) and DIGEST is
	// derived from the hub ID, the Work and the object's group, kind, namespace and name. The executor treats
	// as its Work's own (applies over it, deletes it when the Work lets go) only an object whose
	// AnnotationOwner is the one it would write there: not another hub's, nor one copied from another object.
	// Objects marked before it existed are recognised for the object their Work recorded as applied, and
	// marked anew at the next apply.
	AnnotationOwner = "work.flotilla.io/owner"

	// AnnotationAdopted on a member object says Flotilla took it over (conflictResolution: Overwrite, or a
	// namespace it had created implicitly) rather than created it for its Work: such an object is left in
	// place when its Work lets go of it, unless the template opts in with AnnotationDeletionPolicy.
	AnnotationAdopted = "work.flotilla.io/adopted"

	// AnnotationDeletionPolicy on a template, carried into its manifests, set to DeletionPolicyDelete opts in
	// to deleting what Flotilla otherwise leaves in place when a Work lets go of it: objects it adopted, and
	// Namespaces, CustomResourceDefinitions and PersistentVolumeClaims it created. A Namespace or CRD Flotilla
	// did not create is never deleted by it.
	AnnotationDeletionPolicy = "work.flotilla.io/deletion-policy"
	DeletionPolicyDelete     = "Delete"

	// AnnotationDependency on a rendered manifest marks an object that follows a workload (propagateDeps).
	// Several Works may carry the same dependency; the first to create it in a member manages it.
	AnnotationDependency = "work.flotilla.io/dependency"

	// AnnotationTemplateGeneration on a rendered manifest is the template generation it was rendered from.
	AnnotationTemplateGeneration = "work.flotilla.io/template-generation"

	// AnnotationExpanded on a rendered manifest names the kind of the template it was expanded from (a
	// HelmRelease's chart objects say HelmRelease): the Work's manifests together stand for the template, and
	// its report is theirs folded (Work.TemplateStatus).
	AnnotationExpanded = "work.flotilla.io/expanded"
	// AnnotationExpandedVersion on an expanded manifest is the version of what it was expanded from (a chart's
	// version), reported as the template's status.version in the member.
	AnnotationExpandedVersion = "work.flotilla.io/expanded-version"

	// AnnotationOverrides on a Work lists the override policies that changed its manifests, in the order
	// they applied.
	AnnotationOverrides = "work.flotilla.io/overrides"

	// AnnotationRevision on a Work is the hash of the template revision its manifests were rendered from
	// (only under a progressive rollout).
	AnnotationRevision = "work.flotilla.io/revision"

	// AnnotationRolloutPaused "true" on a binding holds its rollout's next wave (`flotilla rollout pause`).
	AnnotationRolloutPaused = "work.flotilla.io/rollout-paused"

	// AnnotationRolloutAllAtOnce on a binding names a revision hash that reaches every cluster at once, whatever
	// the strategy (`flotilla rollout undo --all-at-once`); it has no effect on any other revision.
	AnnotationRolloutAllAtOnce = "work.flotilla.io/rollout-all-at-once"

	// LabelRevisionOf on a ControllerRevision names the binding whose template it is a revision of; the
	// ControllerRevision lives in the template's namespace (flotilla-system for a cluster-scoped template).
	LabelRevisionOf = "work.flotilla.io/revision-of"

	// AnnotationLazyTemplate on the binding of a template whose policy has activationPreference Lazy is a hash
	// of the template's content when the binding was last derived: while the template keeps that content,
	// changes of the policy do not reach the binding.
	AnnotationLazyTemplate = "work.flotilla.io/lazy-template"

	// AnnotationRelease on a binding being deleted says its member objects stay: the template was released,
	// not deleted.
	AnnotationRelease = "work.flotilla.io/release"

	// LabelRetainReplicas on a template, carried into its manifests, set to "true" leaves spec.replicas to
	// the members: Flotilla applies the template's replicas when it creates the object in a member and
	// never again, so a member-side autoscaler or person owns the count. LabelKarmadaRetainReplicas, Karmada's
	// label for the same, is honoured too. An object a HorizontalPodAutoscaler in the member scales is
	// treated so without any label.
	LabelRetainReplicas        = "work.flotilla.io/retain-replicas"
	LabelKarmadaRetainReplicas = "resourcetemplate.karmada.io/retain-replicas"

	// AnnotationRetainedFields on a rendered manifest lists, comma-separated, the dotted paths of the fields
	// its kind's InterpreterCustomization says members own (its retention). The executor leaves them out
	// where the member object has them, like spec.replicas under LabelRetainReplicas, and does not apply the
	// annotation itself.
	AnnotationRetainedFields = "work.flotilla.io/retained-fields"

	// ConditionOverridden on a binding is False when an override policy cannot apply to it; the Works keep
	// their last good manifests.
	ConditionOverridden = "Overridden"

	// TemplateConditionPropagated on a template (in its status.conditions, next to the kind's own aggregated
	// conditions) is True when the template runs its current generation in every target cluster, applied and
	// healthy there; False says which clusters are not there yet. It is written for the kinds whose status
	// the hub aggregates.
	TemplateConditionPropagated = "flotilla.io/Propagated"

	// FinalizerExecution keeps a Work until its objects are removed from the member (or released).
	FinalizerExecution = "work.flotilla.io/execution"
	// FinalizerBinding keeps a binding until its Works are gone.
	FinalizerBinding = "work.flotilla.io/binding"
)

// Binding is a ResourceBinding or a ClusterResourceBinding: an API object (a controller-runtime client.Object)
// with a binding's spec and status. The two kinds differ only in scope, so every controller, command and page
// that handles bindings serves both through it.
// +kubebuilder:object:generate=false
type Binding interface {
	metav1.Object
	runtime.Object
	BindingSpec() *ResourceBindingSpec
	BindingStatus() *ResourceBindingStatus
}

var (
	_ Binding = &ResourceBinding{}
	_ Binding = &ClusterResourceBinding{}
)

// BindingSpec returns the binding's spec.
func (b *ResourceBinding) BindingSpec() *ResourceBindingSpec { return &b.Spec }

// BindingStatus returns the binding's status.
func (b *ResourceBinding) BindingStatus() *ResourceBindingStatus { return &b.Status }

// BindingSpec returns the binding's spec.
func (b *ClusterResourceBinding) BindingSpec() *ResourceBindingSpec { return &b.Spec }

// BindingStatus returns the binding's status.
func (b *ClusterResourceBinding) BindingStatus() *ResourceBindingStatus { return &b.Status }

// FieldManager is the field manager of what Flotilla applies in member clusters and of the objects the hub
// sets up for itself. Each hub controller writes its own fields of Flotilla's objects under
// ControllerFieldManager(name), so that managedFields tell which controller owns which field.
const FieldManager = "flotilla"

// ControllerFieldManager is the field manager of one hub controller.
func ControllerFieldManager(controller string) string { return FieldManager + "-" + controller }
