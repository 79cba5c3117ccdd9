package v1alpha1

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

func TestBindingName(t *testing.T) {
	deployment := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	if got := BindingName(deployment, "web"); got != "web-deployment" {
		t.Fatal(got)
	}
	if got := BindingName(schema.GroupKind{Kind: "Service"}, "web"); got != "web-service" {
		t.Fatal(got)
	}
	a := BindingName(schema.GroupKind{Group: "example.com", Kind: "Deployment"}, "web")
	b := BindingName(schema.GroupKind{Group: "other.io", Kind: "Deployment"}, "web")
	if a == b || a == "web-deployment" {
		t.Fatalf("groups collide: %s %s", a, b)
	}

	long := strings.Repeat("a", 60)
	longest := strings.Repeat("b", 250) + ".cde"
	role := schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}
	for _, tc := range []struct {
		gk   schema.GroupKind
		name string
	}{
		{deployment, long},
		{deployment, long + "x"},
		{deployment, longest},
		{deployment, strings.Repeat("a.", 40) + "b"},
		{role, "system:controller:persistent-volume-binder"},
		{role, strings.Repeat("c", 53) + ".-x"},
	} {
		got := BindingName(tc.gk, tc.name)
		if errs := append(validation.IsDNS1123Subdomain(got), validation.IsValidLabelValue(got)...); len(errs) > 0 {
			t.Errorf("BindingName(%s, %q) = %q: %v", tc.gk, tc.name, got, errs)
		}
		if again := BindingName(tc.gk, tc.name); again != got {
			t.Errorf("BindingName(%s, %q) is not stable: %q, then %q", tc.gk, tc.name, got, again)
		}
	}
	if BindingName(deployment, long) == BindingName(deployment, long+"x") {
		t.Error("two long names that differ at the end share a binding")
	}
	if got := BindingName(deployment, longest); !strings.HasPrefix(got, "bbbb") {
		t.Errorf("a shortened name keeps the start of the template's name: %q", got)
	}
}

// TestWorkNamesFitTheirLimits: the Work of the template with the longest name an object may have, in the
// namespace with the longest name, has a valid name, and the labels that name its binding are values the API
// server accepts.
func TestWorkNamesFitTheirLimits(t *testing.T) {
	namespace := strings.Repeat("n", validation.DNS1123LabelMaxLength)
	template := strings.Repeat("t", validation.DNS1123SubdomainMaxLength)
	for _, gk := range []schema.GroupKind{{Group: "apps", Kind: "Deployment"}, {Group: "example.com", Kind: "Widget"}} {
		binding := BindingName(gk, template)
		for _, ns := range []string{namespace, ""} {
			if name := WorkName(ns, binding); len(validation.IsDNS1123Subdomain(name)) > 0 {
				t.Errorf("Work name %q: %v", name, validation.IsDNS1123Subdomain(name))
			}
			for k, v := range map[string]string{LabelBindingNamespace: ns, LabelBindingName: binding} {
				if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
					t.Errorf("label %s=%q: %v", k, v, errs)
				}
			}
		}
	}
	if got := WorkName("shop", "web-deployment"); got != "shop.web-deployment" {
		t.Errorf("WorkName of a ResourceBinding: %q", got)
	}
	if got := WorkName("", "admin-clusterrole-1a2b3c4d"); got != "admin-clusterrole-1a2b3c4d" {
		t.Errorf("WorkName of a ClusterResourceBinding: %q", got)
	}
}
