package v1alpha1

// Labels the detector puts on a template to record which policy claimed it.
const (
	LabelPropagationPolicyNamespace = "propagationpolicy.flotilla.io/namespace"
	LabelPropagationPolicyName      = "propagationpolicy.flotilla.io/name"
	LabelClusterPropagationPolicy   = "clusterpropagationpolicy.flotilla.io/name"
)

// DefaultSchedulerName is the name of Flotilla's own scheduler: a policy whose schedulerName is empty or this
// name is placed by it; a binding naming any other scheduler is left to that scheduler.
const DefaultSchedulerName = "default-scheduler"

// KarmadaGroup is Karmada's policy API group, which the hub also serves: each of its objects is mirrored onto
// its twin in this group.
const KarmadaGroup = "policy.karmada.io"
