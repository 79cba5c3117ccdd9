package selection

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	appsv1alpha1 "github.com/flotilla-io/flotilla/api/apps/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// Policy returns how precisely a policy's resource selectors select template t (NoMatch when none does): the
// most precise Resource match among the selectors that may reach t at all (reachable). namespace is the
// policy's own namespace, empty for a cluster-scoped policy; a namespaced policy sees only the templates of
// its own namespace. Propagation and override policies select templates by this one rule.
func Policy(namespace string, selectors []policyv1alpha1.ResourceSelector, t *unstructured.Unstructured) Precision {
	if namespace != "" && namespace != t.GetNamespace() {
		return NoMatch
	}
	best := NoMatch
	for _, s := range selectors {
		if reachable(namespace, s, t) {
			best = max(best, Resource(s, t))
		}
	}
	return best
}

// FlotillaGroup reports whether group is one of Flotilla's own API groups (cluster.flotilla.io, ...), whose
// objects never leave the hub. apps.flotilla.io is not: its kinds (HelmRelease) are templates, placed by
// policies and expanded on the hub into the objects members get.
func FlotillaGroup(group string) bool {
	return group != appsv1alpha1.GroupName && (group == "flotilla.io" || strings.HasSuffix(group, ".flotilla.io"))
}

// kubeNamespaces hold what Kubernetes itself runs on the hub (bootstrap tokens, cluster-info, node
// leases). Their templates are propagated only when a selector names the namespace.
var kubeNamespaces = map[string]bool{
	metav1.NamespaceSystem: true, metav1.NamespacePublic: true, corev1.NamespaceNodeLease: true,
}

// homeNamespace is the namespace a template belongs to for the system rules: its own namespace, or its
// name for a Namespace object.
func homeNamespace(t *unstructured.Unstructured) string {
	if t.GroupVersionKind().GroupKind() == (schema.GroupKind{Kind: "Namespace"}) {
		return t.GetName()
	}
	return t.GetNamespace()
}

// reachable reports whether selector s of a policy in policyNamespace (empty for a cluster-scoped policy) may
// select template t at all. Flotilla's own objects (its kinds, flotilla-system with the push credentials, the
// per-cluster namespaces with the Works and Leases) and bootstrap-token Secrets never leave the hub, whatever
// a policy says: a ClusterPropagationPolicy that selects every Secret must not hand a member the credentials
// of the others. Templates of kube-system, kube-public and kube-node-lease (and those Namespace objects
// themselves) need an explicit opt-in: a selector that names the namespace (namespace: kube-system, or name:
// kube-system for the Namespace), or a policy that lives in it.
func reachable(policyNamespace string, s policyv1alpha1.ResourceSelector, t *unstructured.Unstructured) bool {
	gvk := t.GroupVersionKind()
	if FlotillaGroup(gvk.Group) {
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
	return s.Namespace == ns || policyNamespace == ns
}
