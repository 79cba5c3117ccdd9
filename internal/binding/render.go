package binding

import (
	"maps"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// StripServerSet removes from obj what the API server that holds it set, so that another server sets its
// own: status, identity and bookkeeping metadata, the annotations of kubectl's and the Deployment
// controller's, a Service's allocated addresses and a Job's generated selector. The hub does it to a template
// for a member, and `flotilla promote` to a member's object for the hub.
func StripServerSet(obj *unstructured.Unstructured) {
	delete(obj.Object, "status")
	for _, f := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp",
		"deletionGracePeriodSeconds", "managedFields", "ownerReferences", "finalizers", "selfLink"} {
		unstructured.RemoveNestedField(obj.Object, "metadata", f)
	}
	annotations := obj.GetAnnotations()
	delete(annotations, "kubectl.kubernetes.io/last-applied-configuration")
	delete(annotations, "deployment.kubernetes.io/revision")
	if len(annotations) == 0 {
		annotations = nil
	}
	obj.SetAnnotations(annotations)
	switch obj.GroupVersionKind().GroupKind() {
	case schema.GroupKind{Kind: "Service"}:
		// Each server allocates these from its own range.
		for _, f := range []string{"clusterIP", "clusterIPs", "healthCheckNodePort"} {
			unstructured.RemoveNestedField(obj.Object, "spec", f)
		}
	case schema.GroupKind{Group: "batch", Kind: "Job"}:
		if manual, _, _ := unstructured.NestedBool(obj.Object, "spec", "manualSelector"); !manual {
			unstructured.RemoveNestedField(obj.Object, "spec", "selector")
			for _, l := range []string{"controller-uid", "batch.kubernetes.io/controller-uid", "job-name", "batch.kubernetes.io/job-name"} {
				unstructured.RemoveNestedField(obj.Object, "spec", "template", "metadata", "labels", l)
			}
		}
	}
}

// Render turns a template into the manifest for one cluster: fields the hub's API server set are removed
// (a member sets its own), Flotilla's claim labels are dropped, the template generation is recorded, and a
// divided workload gets the cluster's share: its replicas, and a Job its part of the completions. division is
// the divided placement the target is part of, nil when the template is not divided.
func Render(template *unstructured.Unstructured, target workv1alpha1.TargetCluster, division []workv1alpha1.TargetCluster) *unstructured.Unstructured {
	m := template.DeepCopy()
	StripServerSet(m)
	labels := m.GetLabels()
	for _, l := range []string{policyv1alpha1.LabelPropagationPolicyNamespace, policyv1alpha1.LabelPropagationPolicyName,
		policyv1alpha1.LabelClusterPropagationPolicy} {
		delete(labels, l)
	}
	if len(labels) == 0 {
		labels = nil // a template whose only labels were the claim renders as it did before the claim
	}
	m.SetLabels(labels)
	annotations := m.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[workv1alpha1.AnnotationTemplateGeneration] = strconv.FormatInt(template.GetGeneration(), 10)
	m.SetAnnotations(annotations)
	if division != nil {
		interpreter.ReviseReplicas(m, target.Replicas)
		interpreter.ShareCompletions(m, target.Name, division)
	}
	dropNulls(m.Object)
	return m
}

// Division is the placement a binding divides its replicas over, nil when every cluster runs the whole
// template.
func Division(spec *workv1alpha1.ResourceBindingSpec) []workv1alpha1.TargetCluster {
	if spec.Placement == nil || spec.Placement.ReplicaScheduling == nil ||
		spec.Placement.ReplicaScheduling.ReplicaSchedulingType != policyv1alpha1.ReplicaSchedulingDivided {
		return nil
	}
	if spec.Clusters == nil {
		return []workv1alpha1.TargetCluster{}
	}
	return spec.Clusters
}

// injectPreservedState labels the manifest for cluster with the state the binding's failovers preserved,
// when the binding moved to cluster in that failover (the cluster is not among those it ran on before):
// the replacement resumes from the failed copy's state, and the copies that kept running are left as they
// are. The labels stay while the failover record lasts; the scheduler drops it when it expires, and the
// next render removes them.
func injectPreservedState(m *unstructured.Unstructured, records []workv1alpha1.FailoverRecord, cluster string) {
	labels := m.GetLabels()
	for _, r := range records {
		if len(r.PreservedLabelState) == 0 || r.FromCluster == cluster || slices.Contains(r.ClustersBeforeFailover, cluster) {
			continue
		}
		if labels == nil {
			labels = map[string]string{}
		}
		maps.Copy(labels, r.PreservedLabelState)
	}
	m.SetLabels(labels)
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
