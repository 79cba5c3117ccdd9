package v1alpha1

// Labels the detector puts on a template to record which policy claimed it.
const (
	LabelPropagationPolicyNamespace = "propagationpolicy.flotilla.io/namespace"
	LabelPropagationPolicyName      = "propagationpolicy.flotilla.io/name"
	LabelClusterPropagationPolicy   = "clusterpropagationpolicy.flotilla.io/name"
)
