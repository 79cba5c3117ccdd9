package detector

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// kubeNamespaces hold what Kubernetes itself runs on the hub (bootstrap tokens, cluster-info, node
// leases). Their templates are propagated only when a selector names the namespace.
var kubeNamespaces = map[string]bool{
	metav1.NamespaceSystem: true, metav1.NamespacePublic: true, corev1.NamespaceNodeLease: true,
}

// flotillaGroup reports whether group is one of Flotilla's own API groups (cluster.flotilla.io, ...).
func flotillaGroup(group string) bool {
	return group == "flotilla.io" || strings.HasSuffix(group, ".flotilla.io")
}

// homeNamespace is the namespace a template belongs to for the system rules: its own namespace, or its
// name for a Namespace object.
func homeNamespace(t *unstructured.Unstructured) string {
	if t.GroupVersionKind().GroupKind() == (schema.GroupKind{Kind: "Namespace"}) {
		return t.GetName()
	}
	return t.GetNamespace()
}

// reachable reports whether selector s of policy p may select template t at all. Flotilla's own objects
// (its kinds, flotilla-system with the push credentials, the per-cluster namespaces with the Works and
// Leases) and bootstrap-token Secrets never leave the hub, whatever a policy says: a ClusterPropagationPolicy
// that selects every Secret must not hand a member the credentials of the others. Templates of kube-system,
// kube-public and kube-node-lease (and those Namespace objects themselves) need an explicit opt-in: a
// selector that names the namespace (namespace: kube-system, or name: kube-system for the Namespace), or a
// PropagationPolicy that lives in it.
func reachable(p Policy, s policyv1alpha1.ResourceSelector, t *unstructured.Unstructured) bool {
	gvk := t.GroupVersionKind()
	if flotillaGroup(gvk.Group) {
		return false
	}
	if gvk.GroupKind() == (schema.GroupKind{Kind: "Secret"}) {
		if typ, _, _ := unstructured.NestedString(t.Object, "type"); typ == string(corev1.SecretTypeBootstrapToken) {
			return false
		}
	}
	ns := homeNamespace(t)
	if _, isCluster := clusterv1alpha1.ClusterOfNamespace(ns); isCluster || ns == clusterv1alpha1.SystemNamespace {
		return false
	}
	if !kubeNamespaces[ns] {
		return true
	}
	if t.GetNamespace() == "" {
		return s.Name == ns // the Namespace object itself
	}
	return s.Namespace == ns || p.Namespace == ns
}
