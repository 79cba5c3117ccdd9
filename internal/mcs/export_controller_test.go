package mcs

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// TestExportOfBinding: only the binding of Service NAME wakes the export NAME; bindings of other kinds whose
// names end the same way, and cluster bindings, do not.
func TestExportOfBinding(t *testing.T) {
	cases := []struct {
		namespace, binding, want string
	}{
		{"shop", workv1alpha1.BindingName(serviceKind, "web"), "shop/web"},
		{"shop", workv1alpha1.BindingName(serviceKind, "my-service"), "shop/my-service"},
		{"shop", workv1alpha1.BindingName(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "web"), ""},
		{"shop", workv1alpha1.BindingName(schema.GroupKind{Group: "example.com", Kind: "Service"}, "web"), ""},
		{"", workv1alpha1.BindingName(serviceKind, "web"), ""},
	}
	for _, tc := range cases {
		got := ""
		if reqs := exportOfBinding(tc.namespace, tc.binding); len(reqs) == 1 {
			got = reqs[0].String()
		}
		if got != tc.want {
			t.Errorf("exportOfBinding(%q, %q) = %q, want %q", tc.namespace, tc.binding, got, tc.want)
		}
	}
}

func TestNames(t *testing.T) {
	long := "a-very-long-service-name-that-goes-on-and-on-past-the-label-limit"
	if got := DerivedName(long); len(got) > 63 || got == DerivedName(long+"x") {
		t.Errorf("DerivedName(%q) = %q: longer than a label or not unique", long, got)
	}
	if got := DerivedName("web"); got != "derived-web" {
		t.Errorf("DerivedName(web) = %q", got)
	}
	if ns, name, ok := splitRequestName(requestName("shop", "web.v2")); !ok || ns != "shop" || name != "web.v2" {
		t.Errorf("request name does not round-trip: %q %q %v", ns, name, ok)
	}
}

// TestServiceBinding: a binding wakes the export of the Service it binds, whatever its own name.
func TestServiceBinding(t *testing.T) {
	binding := func(apiVersion, kind, name string) *workv1alpha1.ResourceBinding {
		b := &workv1alpha1.ResourceBinding{}
		b.Namespace, b.Name = "shop", "anything"
		b.Spec.Resource = workv1alpha1.ObjectReference{APIVersion: apiVersion, Kind: kind, Namespace: "shop", Name: name}
		return b
	}
	if reqs := serviceBinding(context.Background(), binding("v1", "Service", "web")); len(reqs) != 1 || reqs[0].String() != "shop/web" {
		t.Errorf("a Service's binding wakes %v, want shop/web", reqs)
	}
	if reqs := serviceBinding(context.Background(), binding("apps/v1", "Deployment", "web")); len(reqs) != 0 {
		t.Errorf("a Deployment's binding wakes %v", reqs)
	}
}
