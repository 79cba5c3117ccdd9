package selection

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

func TestReachable(t *testing.T) {
	object := func(gvk schema.GroupVersionKind, namespace, name, secretType string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetGroupVersionKind(gvk)
		u.SetNamespace(namespace)
		u.SetName(name)
		if secretType != "" {
			u.Object["type"] = secretType
		}
		return u
	}
	secret := schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	namespace := schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	allSecrets := policyv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "Secret"}
	kubeSystemSecrets := policyv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "Secret", Namespace: "kube-system"}
	const cluster = "" // a cluster-scoped policy
	tests := []struct {
		name string
		p    string // the policy's namespace
		s    policyv1alpha1.ResourceSelector
		t    *unstructured.Unstructured
		want bool
	}{
		{"an ordinary Secret", cluster, allSecrets, object(secret, "shop", "db", "Opaque"), true},
		{"a push credential", cluster, allSecrets, object(secret, "flotilla-system", "m3-kubeconfig", "Opaque"), false},
		{"a Secret of a cluster namespace", cluster, allSecrets, object(secret, "flotilla-cluster-m1", "x", ""), false},
		{"a bootstrap token in kube-system, even when named", cluster, kubeSystemSecrets,
			object(secret, "kube-system", "bootstrap-token-abcdef", "bootstrap.kubernetes.io/token"), false},
		{"a bootstrap token elsewhere", cluster, allSecrets, object(secret, "shop", "t", "bootstrap.kubernetes.io/token"), false},
		{"kube-system without opt-in", cluster, allSecrets, object(secret, "kube-system", "x", "Opaque"), false},
		{"kube-node-lease without opt-in", cluster, allSecrets, object(secret, "kube-node-lease", "x", ""), false},
		{"kube-system named by the selector", cluster, kubeSystemSecrets, object(secret, "kube-system", "x", "Opaque"), true},
		{"kube-public by a policy that lives there", "kube-public", allSecrets,
			object(secret, "kube-public", "x", ""), true},
		{"the kube-system Namespace without opt-in", cluster, policyv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "Namespace"},
			object(namespace, "", "kube-system", ""), false},
		{"the kube-system Namespace named", cluster, policyv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "Namespace", Name: "kube-system"},
			object(namespace, "", "kube-system", ""), true},
		{"the flotilla-system Namespace", cluster, policyv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "Namespace", Name: "flotilla-system"},
			object(namespace, "", "flotilla-system", ""), false},
		{"an ordinary Namespace", cluster, policyv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "Namespace"},
			object(namespace, "", "shop", ""), true},
		{"a Flotilla kind", cluster, policyv1alpha1.ResourceSelector{APIVersion: "cluster.flotilla.io/v1alpha1", Kind: "Cluster"},
			object(schema.GroupVersionKind{Group: "cluster.flotilla.io", Version: "v1alpha1", Kind: "Cluster"}, "", "m1", ""), false},
		{"a PropagationPolicy", "shop", policyv1alpha1.ResourceSelector{APIVersion: "policy.flotilla.io/v1alpha1", Kind: "PropagationPolicy"},
			object(schema.GroupVersionKind{Group: "policy.flotilla.io", Version: "v1alpha1", Kind: "PropagationPolicy"}, "shop", "p", ""), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := reachable(tt.p, tt.s, tt.t); got != tt.want {
				t.Fatalf("reachable = %v, want %v", got, tt.want)
			}
		})
	}
}
