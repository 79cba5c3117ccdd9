package binding

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// TestRenderWithCustomization: a divided kind the built-in rules do not know gets each cluster's share where
// its customization says, and the fields it retains are listed for the executor, their values kept as the
// starting values of a new member object.
func TestRenderWithCustomization(t *testing.T) {
	s := runtime.NewScheme()
	if err := configv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	gizmos := &configv1alpha1.InterpreterCustomization{ObjectMeta: metav1.ObjectMeta{Name: "gizmos", UID: "g"},
		Spec: configv1alpha1.InterpreterCustomizationSpec{
			Target: configv1alpha1.CustomizationTarget{APIVersion: "example.io/v1", Kind: "Gizmo"},
			Customizations: configv1alpha1.CustomizationRules{
				ReplicaResource: &configv1alpha1.Expression{CEL: `{"replicas": object.spec.workers.count}`},
				ReplicaRevision: &configv1alpha1.Expression{CEL: `{"spec.workers.count": replicas}`},
				Retention:       &configv1alpha1.Expression{CEL: `["spec.autoscaled", "spec.absent.field"]`},
			},
		}}
	interp := interpreter.New(fake.NewClientBuilder().WithScheme(s).WithObjects(gizmos).Build())
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		template string
		divided  bool
		path     []string
		want     int64
		retained string
	}{
		{"customized revision", `{"apiVersion":"example.io/v1","kind":"Gizmo","metadata":{"name":"g"},"spec":{"workers":{"count":6},"autoscaled":true}}`,
			true, []string{"spec", "workers", "count"}, 2, "spec.autoscaled,spec.absent.field"},
		{"not divided", `{"apiVersion":"example.io/v1","kind":"Gizmo","metadata":{"name":"g"},"spec":{"workers":{"count":6},"autoscaled":true}}`,
			false, []string{"spec", "workers", "count"}, 6, "spec.autoscaled,spec.absent.field"},
		{"shipped CloneSet", `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"CloneSet","metadata":{"name":"c"},"spec":{"replicas":6}}`,
			true, []string{"spec", "replicas"}, 2, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := workv1alpha1.TargetCluster{Name: "m1", Replicas: 2}
			var division []workv1alpha1.TargetCluster
			if tc.divided {
				division = []workv1alpha1.TargetCluster{target, {Name: "m2", Replicas: 4}}
			}
			m, err := RenderInterpreted(ctx, interp, parse(t, tc.template), target, division)
			if err != nil {
				t.Fatal(err)
			}
			if got, _, _ := unstructured.NestedInt64(m.Object, tc.path...); got != tc.want {
				t.Errorf("%v = %d, want %d", tc.path, got, tc.want)
			}
			if got := m.GetAnnotations()[workv1alpha1.AnnotationRetainedFields]; got != tc.retained {
				t.Errorf("retained-fields annotation %q, want %q", got, tc.retained)
			}
			if _, found, _ := unstructured.NestedFieldNoCopy(m.Object, "spec", "autoscaled"); tc.retained != "" && !found {
				t.Error("spec.autoscaled, which the customization retains, is not in the manifest as the starting value")
			}
		})
	}
}
