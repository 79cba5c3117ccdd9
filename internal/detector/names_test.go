package detector

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
