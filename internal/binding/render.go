package binding

import (
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// Render turns a template into the manifest for one cluster: fields the hub's API server set are removed
// (a member sets its own), Flotilla's claim labels are dropped, the template generation is recorded, and a
// divided workload gets the cluster's replicas.
func Render(template *unstructured.Unstructured, target workv1alpha1.TargetCluster, divided bool) *unstructured.Unstructured {
	m := template.DeepCopy()
	delete(m.Object, "status")
	for _, f := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp",
		"deletionGracePeriodSeconds", "managedFields", "ownerReferences", "finalizers", "selfLink"} {
		unstructured.RemoveNestedField(m.Object, "metadata", f)
	}
	labels := m.GetLabels()
	for _, l := range []string{policyv1alpha1.LabelPropagationPolicyNamespace, policyv1alpha1.LabelPropagationPolicyName,
		policyv1alpha1.LabelClusterPropagationPolicy} {
		delete(labels, l)
	}
	m.SetLabels(labels)
	annotations := m.GetAnnotations()
	delete(annotations, "kubectl.kubernetes.io/last-applied-configuration")
	delete(annotations, "deployment.kubernetes.io/revision")
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[workv1alpha1.AnnotationTemplateGeneration] = strconv.FormatInt(template.GetGeneration(), 10)
	m.SetAnnotations(annotations)

	switch template.GroupVersionKind().GroupKind() {
	case schema.GroupKind{Kind: "Service"}:
		// The hub allocated these from its own range; each member allocates its own.
		for _, f := range []string{"clusterIP", "clusterIPs", "healthCheckNodePort"} {
			unstructured.RemoveNestedField(m.Object, "spec", f)
		}
	case schema.GroupKind{Group: "batch", Kind: "Job"}:
		if manual, _, _ := unstructured.NestedBool(m.Object, "spec", "manualSelector"); !manual {
			unstructured.RemoveNestedField(m.Object, "spec", "selector")
			for _, l := range []string{"controller-uid", "batch.kubernetes.io/controller-uid", "job-name", "batch.kubernetes.io/job-name"} {
				unstructured.RemoveNestedField(m.Object, "spec", "template", "metadata", "labels", l)
			}
		}
	}
	if divided {
		interpreter.ReviseReplicas(m, target.Replicas)
	}
	dropNulls(m.Object)
	return m
}

// dropNulls removes null fields, as the API server does when it stores a Work: the rendered manifest then
// equals the stored one byte for byte, and an unchanged Work is not written again.
func dropNulls(m map[string]any) {
	for k, v := range m {
		switch v := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			dropNulls(v)
		case []any:
			for _, item := range v {
				if item, ok := item.(map[string]any); ok {
					dropNulls(item)
				}
			}
		}
	}
}

// dividesReplicas reports whether a binding divides its replicas over its clusters rather than running all
// of them in each.
func dividesReplicas(spec *workv1alpha1.ResourceBindingSpec) bool {
	return spec.Placement != nil && spec.Placement.ReplicaScheduling != nil &&
		spec.Placement.ReplicaScheduling.ReplicaSchedulingType == policyv1alpha1.ReplicaSchedulingDivided
}
