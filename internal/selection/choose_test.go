package selection

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

func policy(ns, name string, priority int32, preempt policyv1alpha1.PreemptionPolicy, sel policyv1alpha1.ResourceSelector) Propagation {
	return Propagation{Namespace: ns, Name: name, Spec: &policyv1alpha1.PropagationSpec{
		Priority: ptr.To(priority), Preemption: preempt, ResourceSelectors: []policyv1alpha1.ResourceSelector{sel}}}
}

func TestChoose(t *testing.T) {
	web := &unstructured.Unstructured{}
	web.SetGroupVersionKind(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
	web.SetNamespace("shop")
	web.SetName("web")
	web.SetLabels(map[string]string{"tier": "front"})
	kind := policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment"}
	byName := policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
	byLabel := policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "front"}}}
	otherName := policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment", Name: "api"}
	otherVersion := policyv1alpha1.ResourceSelector{APIVersion: "apps/v1beta1", Kind: "Deployment"}
	otherGroup := policyv1alpha1.ResourceSelector{APIVersion: "extensions/v1beta1", Kind: "Deployment"}

	tests := []struct {
		name     string
		policies []Propagation
		claimed  *Propagation
		want     string
	}{
		{"none matches", []Propagation{policy("shop", "p", 0, "", otherName), policy("", "c", 0, "", otherGroup)}, nil, ""},
		{"another version of the kind is the same template", []Propagation{policy("", "c", 0, "", otherVersion)}, nil, "/c"},
		{"another namespace's policy does not see it", []Propagation{policy("other", "p", 0, "", kind)}, nil, ""},
		{"higher priority wins", []Propagation{policy("shop", "low", 1, "", kind), policy("shop", "high", 5, "", kind)}, nil, "shop/high"},
		{"a PropagationPolicy wins over a higher-priority ClusterPropagationPolicy", []Propagation{policy("shop", "low", 1, "", kind), policy("", "high", 5, "", byName)}, nil, "shop/low"},
		{"between ClusterPropagationPolicies higher priority wins", []Propagation{policy("", "low", 1, "", byName), policy("", "high", 5, "", kind)}, nil, "/high"},
		{"a ClusterPropagationPolicy never preempts a PropagationPolicy", []Propagation{policy("shop", "pp", 0, "", kind), policy("", "cpp", 9, policyv1alpha1.PreemptAlways, byName)},
			&Propagation{Namespace: "shop", Name: "pp"}, "shop/pp"},
		{"a PropagationPolicy with preemption takes a ClusterPropagationPolicy's claim whatever the priorities", []Propagation{policy("", "cpp", 9, "", byName), policy("shop", "pp", 0, policyv1alpha1.PreemptAlways, kind)},
			&Propagation{Name: "cpp"}, "shop/pp"},
		{"a PropagationPolicy without preemption leaves a ClusterPropagationPolicy's claim", []Propagation{policy("", "cpp", 0, "", byName), policy("shop", "pp", 9, policyv1alpha1.PreemptNever, kind)},
			&Propagation{Name: "cpp"}, "/cpp"},
		{"name beats labels beats kind", []Propagation{policy("shop", "a", 0, "", kind), policy("shop", "b", 0, "", byLabel), policy("shop", "c", 0, "", byName)}, nil, "shop/c"},
		{"namespaced before cluster policy", []Propagation{policy("", "a", 0, "", byName), policy("shop", "z", 0, "", byName)}, nil, "shop/z"},
		{"then by name", []Propagation{policy("shop", "b", 0, "", kind), policy("shop", "a", 0, "", kind)}, nil, "shop/a"},
		{"a claim stays without preemption", []Propagation{policy("shop", "old", 0, "", kind), policy("shop", "new", 9, policyv1alpha1.PreemptNever, kind)},
			&Propagation{Namespace: "shop", Name: "old"}, "shop/old"},
		{"preemption Always takes the claim", []Propagation{policy("shop", "old", 0, "", kind), policy("shop", "new", 9, policyv1alpha1.PreemptAlways, kind)},
			&Propagation{Namespace: "shop", Name: "old"}, "shop/new"},
		{"a claim by a policy that no longer matches moves", []Propagation{policy("shop", "old", 0, "", otherName), policy("shop", "new", 0, "", kind)},
			&Propagation{Namespace: "shop", Name: "old"}, "shop/new"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if p := Choose(web, tt.policies, tt.claimed); p != nil {
				got = p.Namespace + "/" + p.Name
			}
			if got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}
