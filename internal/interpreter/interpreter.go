// Package interpreter knows what Flotilla needs to know about kinds of objects: how many replicas a workload
// has and what each needs, how to change its replica count for one cluster, whether an object in a member
// is healthy, and how to fold its status over clusters. Built-in rules cover the native workload kinds; an
// InterpreterCustomization (customization.go, registry.go; a few shipped in builtin/) teaches it any other
// kind in CEL, and Interpreter (dispatch.go) asks a kind's customization before the built-in rules. Every
// other kind gets the generic rule (no replicas; healthy once it exists).
//
// The hub's status of a template is shaped like the template's spec, so that tools which judge one object
// (kubectl rollout status and wait, Argo CD, Flux's kstatus) judge the fleet the way they judge one cluster.
// Divided, the spec's replicas are the fleet's and the counters are summed. Duplicated, the spec's replicas
// are every cluster's, so progress counters (updated, ready, available, current, a Job's succeeded) are the
// lowest over the clusters and excess or trouble (replicas, unavailable, a Job's active and failed) the
// highest: 3 replicas on three clusters show 3 once every cluster runs 3. Summed they would show 9, which
// kstatus reads as 6 pods pending termination (never Current) and the API server refuses beside 3 updated.
// The members' conditions are folded too (a Deployment's Available and Progressing, a Job's Complete and
// Failed), and every aggregated template carries flotilla.io/Propagated: applied and healthy everywhere. A
// customized kind's status is its customization's, with the hub's conditions and observedGeneration where
// the kind's status schema takes them (fleetstatus.go).
package interpreter

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// replicaPath is where a kind keeps its replica count.
var replicaPath = map[schema.GroupKind][]string{
	{Group: "apps", Kind: "Deployment"}:  {"spec", "replicas"},
	{Group: "apps", Kind: "StatefulSet"}: {"spec", "replicas"},
	{Group: "apps", Kind: "ReplicaSet"}:  {"spec", "replicas"},
	{Group: "batch", Kind: "Job"}:        {"spec", "parallelism"},
}

// Replicas returns a workload's replica count and one replica's resource requests; ok is false for kinds
// without replicas.
func Replicas(obj *unstructured.Unstructured) (replicas int32, requests corev1.ResourceList, ok bool) {
	path, ok := replicaPath[obj.GroupVersionKind().GroupKind()]
	if !ok {
		return 0, nil, false
	}
	n, found, _ := unstructured.NestedInt64(obj.Object, path...)
	if !found {
		n = 1 // the API server's default for every kind above
	}
	return int32(n), podRequests(obj), true
}

// Requirements returns a workload's replica count and one replica's requirements: its requests and where
// its pod template lets it run (node selector, required node affinity, tolerations); nil when the template
// says nothing of either. ok is false for kinds without replicas.
func Requirements(obj *unstructured.Unstructured) (replicas int32, req *workv1alpha1.ReplicaRequirements, ok bool) {
	replicas, requests, ok := Replicas(obj)
	if !ok {
		return 0, nil, false
	}
	return replicas, requirements(requests, nodeClaim(obj)), true
}

// nodeClaim is where a workload's pod template lets its pods run, nil when it does not say.
func nodeClaim(obj *unstructured.Unstructured) *workv1alpha1.NodeClaim {
	raw, found, _ := unstructured.NestedMap(obj.Object, "spec", "template", "spec")
	if !found {
		return nil
	}
	spec := &corev1.PodSpec{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, spec); err != nil {
		return nil
	}
	claim := &workv1alpha1.NodeClaim{NodeSelector: spec.NodeSelector, Tolerations: spec.Tolerations}
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil {
		claim.HardNodeAffinity = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	return claim
}

// ReviseReplicas sets a workload's replica count in a rendered manifest.
func ReviseReplicas(obj *unstructured.Unstructured, replicas int32) {
	if path, ok := replicaPath[obj.GroupVersionKind().GroupKind()]; ok {
		_ = unstructured.SetNestedField(obj.Object, int64(replicas), path...)
	}
}

// podRequests is what one pod of a workload's template requests (PodRequests), nil when nothing.
func podRequests(obj *unstructured.Unstructured) corev1.ResourceList {
	raw, found, _ := unstructured.NestedMap(obj.Object, "spec", "template", "spec")
	if !found {
		return nil
	}
	return podSpecRequests(raw)
}

// podSpecRequests is what one pod of an unstructured pod spec requests (PodRequests), nil when nothing.
func podSpecRequests(raw map[string]any) corev1.ResourceList {
	spec := &corev1.PodSpec{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, spec); err != nil {
		return nil
	}
	if total := PodRequests(spec); len(total) > 0 {
		return total
	}
	return nil
}

// Health decides whether an object in a member is healthy from its status.
func Health(obj *unstructured.Unstructured) workv1alpha1.ResourceHealth {
	gen := obj.GetGeneration()
	observed, _, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	num := func(field string) int64 { v, _, _ := unstructured.NestedInt64(obj.Object, "status", field); return v }
	want, _, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	if _, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "replicas"); !found {
		want = 1
	}
	healthy := true
	switch obj.GroupVersionKind().GroupKind() {
	case schema.GroupKind{Group: "apps", Kind: "Deployment"}:
		// status.replicas counts the old ReplicaSets' pods too: a rollout whose new pods never start keeps the
		// old ones available, and is not healthy while they are still there.
		healthy = observed >= gen && num("updatedReplicas") == want && num("availableReplicas") == want && num("replicas") == want
	case schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}:
		healthy = observed >= gen && num("readyReplicas") == want
	case schema.GroupKind{Group: "apps", Kind: "DaemonSet"}:
		healthy = observed >= gen && num("numberReady") == num("desiredNumberScheduled")
	case schema.GroupKind{Group: "batch", Kind: "Job"}:
		healthy = !hasCondition(obj, "Failed")
	case schema.GroupKind{Kind: "Pod"}:
		phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase")
		healthy = phase == string(corev1.PodSucceeded) || (phase == string(corev1.PodRunning) && hasCondition(obj, "Ready"))
	case schema.GroupKind{Kind: "PersistentVolumeClaim"}:
		phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase")
		healthy = phase == string(corev1.ClaimBound)
	case schema.GroupKind{Kind: "Service"}:
		if t, _, _ := unstructured.NestedString(obj.Object, "spec", "type"); t == string(corev1.ServiceTypeLoadBalancer) {
			ingress, _, _ := unstructured.NestedSlice(obj.Object, "status", "loadBalancer", "ingress")
			healthy = len(ingress) > 0
		}
	case schema.GroupKind{Group: "networking.k8s.io", Kind: "Ingress"}:
		ingress, _, _ := unstructured.NestedSlice(obj.Object, "status", "loadBalancer", "ingress")
		healthy = len(ingress) > 0
	}
	if healthy {
		return workv1alpha1.ResourceHealthy
	}
	return workv1alpha1.ResourceUnhealthy
}

func hasCondition(obj *unstructured.Unstructured, condition string) bool {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == condition && m["status"] == "True" {
			return true
		}
	}
	return false
}
