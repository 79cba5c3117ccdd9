package interpreter

import (
	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// PodRequests is what one pod of spec asks its node for, by the rule Kubernetes' scheduler and kubelet use
// (k8s.io/component-helpers/resource): its containers and sidecars (restartable init containers) summed, or
// the largest init container with the sidecars started before it when that is more; pod-level requests
// where the spec sets them; and the pod overhead. It is Flotilla's one rule for a pod's requests: the
// requests of one replica (Replicas, and kube.accuratePodRequirements in Lua) and what a member's pods
// reserve (clusterstatus) are both counted with it, so the scheduler divides like with like.
func PodRequests(spec *corev1.PodSpec) corev1.ResourceList {
	return resourcehelper.PodRequests(&corev1.Pod{Spec: *spec}, resourcehelper.PodResourcesOptions{})
}
