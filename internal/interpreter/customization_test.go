package interpreter

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// widgetCustomization is a customization of a small CRD, Widget, with every operation.
const widgetCustomization = `
apiVersion: config.flotilla.io/v1alpha1
kind: InterpreterCustomization
metadata:
  name: widgets
spec:
  target: {apiVersion: example.io/v1, kind: Widget}
  customizations:
    replicaResource:
      cel: '{"replicas": object.spec.size, "requests": {"cpu": object.spec.cpu}}'
    replicaRevision:
      cel: '{"spec.size": replicas}'
    retention:
      cel: '["spec.paused"]'
    statusReflection:
      cel: '{"ready": object.status.readyReplicas}'
    statusAggregation:
      cel: '{"ready": statuses.map(s, s.status.ready).sum(), "clusters": statuses.map(s, s.clusterName)}'
    healthInterpretation:
      cel: 'object.status.readyReplicas >= object.spec.size'
    dependencyInterpretation:
      cel: '[{"apiVersion": "v1", "kind": "ConfigMap", "name": object.spec.config}]'
`

func widgetIC(t *testing.T, text string) *configv1alpha1.InterpreterCustomization {
	t.Helper()
	ic := &configv1alpha1.InterpreterCustomization{}
	if err := yaml.UnmarshalStrict([]byte(text), ic); err != nil {
		t.Fatal(err)
	}
	return ic
}

func mustCompile(t *testing.T, text string) *Customization {
	t.Helper()
	c, errs := Compile(widgetIC(t, text))
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	return c
}

func widget(status map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.io/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": "ns"},
		"spec":     map[string]any{"size": int64(5), "cpu": "250m", "paused": true, "config": "settings"},
	}}
	if status != nil {
		u.Object["status"] = status
	}
	return u
}

func TestCompileErrorsNameFieldAndPosition(t *testing.T) {
	for _, tc := range []struct {
		name, op, cel string
		want          []string
	}{
		{"undeclared", "healthInterpretation", "spec.replicas > 0", []string{"spec.customizations.healthInterpretation.cel", "<input>:1:1", "undeclared reference to 'spec'"}},
		{"syntax", "statusReflection", "{\"a\": object.status.", []string{"spec.customizations.statusReflection.cel", "<input>:1:"}},
		{"wrong result", "healthInterpretation", "object.status.readyReplicas + 1", []string{"healthInterpretation must return bool"}},
		{"list for a map", "replicaResource", "[1, 2]", []string{"replicaResource must return map"}},
		{"variable of another operation", "healthInterpretation", "replicas > 0", []string{"undeclared reference to 'replicas'"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ic := widgetIC(t, widgetCustomization)
			ic.Spec.Customizations = configv1alpha1.CustomizationRules{}
			e := &configv1alpha1.Expression{CEL: tc.cel}
			switch tc.op {
			case "healthInterpretation":
				ic.Spec.Customizations.HealthInterpretation = e
			case "statusReflection":
				ic.Spec.Customizations.StatusReflection = e
			case "replicaResource":
				ic.Spec.Customizations.ReplicaResource = e
			}
			_, errs := Compile(ic)
			if len(errs) != 1 {
				t.Fatalf("errors %v, want one", errs)
			}
			for _, w := range tc.want {
				if !strings.Contains(errs[0].Error(), w) {
					t.Errorf("error %q does not say %q", errs[0].Error(), w)
				}
			}
		})
	}
}

func TestOperationsOnWidget(t *testing.T) {
	c := mustCompile(t, widgetCustomization)
	ready := widget(map[string]any{"readyReplicas": int64(5), "conditions": []any{}})

	replicas, requests, err := c.Replicas(widget(nil))
	if err != nil || replicas != 5 || !equality.Semantic.DeepEqual(requests, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}) {
		t.Errorf("Replicas = %d, %v, %v; want 5, cpu 250m", replicas, requests, err)
	}

	m := widget(nil)
	if err := c.ReviseReplicas(m, 2); err != nil || m.Object["spec"].(map[string]any)["size"] != int64(2) {
		t.Errorf("ReviseReplicas: %v, spec %v; want size 2", err, m.Object["spec"])
	}

	paths, err := c.Retained(m)
	if err != nil || len(paths) != 1 || paths[0] != "spec.paused" {
		t.Fatalf("Retained = %v, %v", paths, err)
	}
	RemoveFields(m, paths)
	if _, found := m.Object["spec"].(map[string]any)["paused"]; found {
		t.Errorf("spec.paused still in the manifest after retention")
	}

	status, err := c.ReflectStatus(ready)
	if err != nil || !equality.Semantic.DeepEqual(status, map[string]any{"ready": int64(5)}) {
		t.Errorf("ReflectStatus = %v, %v", status, err)
	}

	sum, err := c.AggregateStatus(widget(nil), []Member{{"a", map[string]any{"ready": int64(2)}}, {"b", map[string]any{"ready": int64(3)}}, {"c", nil}})
	if err != nil || !equality.Semantic.DeepEqual(sum, map[string]any{"ready": int64(5), "clusters": []any{"a", "b"}}) {
		t.Errorf("AggregateStatus = %v, %v", sum, err)
	}

	for _, tc := range []struct {
		ready int64
		want  bool
	}{{5, true}, {4, false}} {
		healthy, err := c.Healthy(widget(map[string]any{"readyReplicas": tc.ready}))
		if err != nil || healthy != tc.want {
			t.Errorf("Healthy with %d ready = %v, %v; want %v", tc.ready, healthy, err, tc.want)
		}
	}

	deps, err := c.Dependencies(widget(nil))
	if err != nil || len(deps) != 1 || deps[0] != (Dependency{APIVersion: "v1", Kind: "ConfigMap", Name: "settings"}) {
		t.Errorf("Dependencies = %v, %v", deps, err)
	}
}

// A failing evaluation is an *Error naming the customization and the operation, whatever went wrong.
func TestRuntimeErrorsNameTheCustomization(t *testing.T) {
	c := mustCompile(t, widgetCustomization)
	expensive := widgetIC(t, widgetCustomization)
	expensive.Spec.Customizations = configv1alpha1.CustomizationRules{HealthInterpretation: &configv1alpha1.Expression{
		CEL: "object.spec.items.all(x, object.spec.items.all(y, object.spec.items.all(z, x + y + z >= 0)))"}}
	slow, errs := Compile(expensive)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	items := make([]any, 150)
	for i := range items {
		items[i] = int64(i)
	}
	for _, tc := range []struct {
		name string
		run  func() error
		want string
	}{
		{"missing field", func() error { _, err := c.Healthy(widget(nil)); return err }, "no such key: status"},
		{"wrong shape", func() error {
			_, _, err := c.Replicas(&unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"size": "five", "cpu": "1"}}})
			return err
		}, "replicas is string"},
		{"bad quantity", func() error {
			_, _, err := c.Replicas(&unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"size": int64(1), "cpu": "lots"}}})
			return err
		}, "requests[cpu]"},
		{"revising the name", func() error {
			bad := widgetIC(t, widgetCustomization)
			bad.Spec.Customizations.ReplicaRevision.CEL = `{"metadata.name": "other"}`
			c, _ := Compile(bad)
			return c.ReviseReplicas(widget(nil), 1)
		}, "identifies the object"},
		{"retaining the kind", func() error {
			bad := widgetIC(t, widgetCustomization)
			bad.Spec.Customizations.Retention.CEL = `["kind"]`
			c, _ := Compile(bad)
			_, err := c.Retained(widget(nil))
			return err
		}, "identifies the object"},
		{"over the cost limit", func() error {
			_, err := slow.Healthy(&unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"items": items}}})
			return err
		}, "cost limit"}, // or, on a machine busy enough, "interrupted": the time limit stops it first
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			var failed *Error
			said := strings.Contains(err.Error(), tc.want) || tc.want == "cost limit" && strings.Contains(err.Error(), "operation interrupted")
			if !errors.As(err, &failed) || failed.Customization != "widgets" || !said {
				t.Fatalf("error %v, want an *Error of widgets saying %q", err, tc.want)
			}
		})
	}
}

func TestBuiltinCustomizations(t *testing.T) {
	rollout := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "metadata": map[string]any{"name": "r"},
		"spec": map[string]any{"replicas": int64(6), "template": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": "a", "resources": map[string]any{"requests": map[string]any{"cpu": "100m"}}},
			map[string]any{"name": "b", "resources": map[string]any{"requests": map[string]any{"cpu": "200m", "memory": "1Gi"}}},
		}}}},
	}}
	cloneset := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "metadata": map[string]any{"name": "c", "generation": int64(3)},
		"spec": map[string]any{"replicas": int64(4)},
	}}
	var i *Interpreter // no user customizations: only the shipped ones
	ctx := context.Background()

	n, requests, ok, err := i.Replicas(ctx, rollout)
	if err != nil || !ok || n != 6 || !equality.Semantic.DeepEqual(requests, corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("300m"), corev1.ResourceMemory: resource.MustParse("1Gi")}) {
		t.Errorf("Rollout replicas = %d, %v, %v, %v; want 6 with 300m cpu and 1Gi", n, requests, ok, err)
	}
	if n, _, ok, err := i.Replicas(ctx, cloneset); err != nil || !ok || n != 4 {
		t.Errorf("CloneSet replicas = %d, %v, %v; want 4", n, ok, err)
	}
	revised := cloneset.DeepCopy()
	if err := i.ReviseReplicas(ctx, revised, 1); err != nil || revised.Object["spec"].(map[string]any)["replicas"] != int64(1) {
		t.Errorf("CloneSet revised: %v, %v", revised.Object["spec"], err)
	}

	for _, tc := range []struct {
		name   string
		obj    *unstructured.Unstructured
		status map[string]any
		want   workv1alpha1.ResourceHealth
	}{
		{"rollout healthy", rollout, map[string]any{"phase": "Healthy"}, workv1alpha1.ResourceHealthy},
		{"rollout progressing", rollout, map[string]any{"phase": "Progressing"}, workv1alpha1.ResourceUnhealthy},
		{"cloneset updated", cloneset, map[string]any{"observedGeneration": int64(3), "updatedReadyReplicas": int64(4), "availableReplicas": int64(4)}, workv1alpha1.ResourceHealthy},
		{"cloneset old generation", cloneset, map[string]any{"observedGeneration": int64(2), "updatedReadyReplicas": int64(4), "availableReplicas": int64(4)}, workv1alpha1.ResourceUnhealthy},
		{"cloneset rolling", cloneset, map[string]any{"observedGeneration": int64(3), "updatedReadyReplicas": int64(2), "availableReplicas": int64(4)}, workv1alpha1.ResourceUnhealthy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := tc.obj.DeepCopy()
			obj.Object["status"] = tc.status
			_, health, customized, err := i.Observe(ctx, obj)
			if err != nil || !customized || health != tc.want {
				t.Errorf("Observe = %s, %v, %v; want %s", health, customized, err, tc.want)
			}
		})
	}

	sum, err := i.AggregateStatus(ctx, rollout, Fleet{Members: []Member{
		{"a", map[string]any{"replicas": int64(2), "readyReplicas": int64(2), "phase": "Healthy"}},
		{"b", map[string]any{"replicas": int64(4), "readyReplicas": int64(1), "phase": "Progressing"}},
	}, Divided: true, CaughtUp: true})
	if err != nil || sum["replicas"] != int64(6) || sum["readyReplicas"] != int64(3) || sum["phase"] != "Progressing" {
		t.Errorf("Rollout aggregated status = %v, %v", sum, err)
	}
}

// A user's customization of a kind replaces the shipped one; operations it leaves out are not taken from
// the shipped one either.
func TestUserCustomizationOverridesBuiltin(t *testing.T) {
	s := runtime.NewScheme()
	if err := configv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	user := &configv1alpha1.InterpreterCustomization{
		ObjectMeta: metav1.ObjectMeta{Name: "my-rollouts", UID: "u1"},
		Spec: configv1alpha1.InterpreterCustomizationSpec{
			Target:         configv1alpha1.CustomizationTarget{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout"},
			Customizations: configv1alpha1.CustomizationRules{ReplicaResource: &configv1alpha1.Expression{CEL: `{"replicas": 42}`}},
		},
	}
	i := New(fake.NewClientBuilder().WithScheme(s).WithObjects(user).Build())
	rollout := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
		"spec": map[string]any{"replicas": int64(6)}, "status": map[string]any{"phase": "Degraded"}}}
	n, _, ok, err := i.Replicas(context.Background(), rollout)
	if err != nil || !ok || n != 42 {
		t.Errorf("Replicas = %d, %v, %v; want the user's 42", n, ok, err)
	}
	if _, _, customized, err := i.Observe(context.Background(), rollout); err != nil || customized {
		t.Errorf("Observe customized = %v, %v; want the built-in rules (the user's customization sets no health)", customized, err)
	}
}

// A customization stored before admission checked it (or by a version that accepted more) still runs what
// compiles; the operation that does not fails with the compiler's message when used.
func TestRegistryKeepsBrokenOperationsFailing(t *testing.T) {
	s := runtime.NewScheme()
	if err := configv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	ic := widgetIC(t, widgetCustomization)
	ic.UID = "w"
	ic.Spec.Customizations.HealthInterpretation.CEL = "object.status.readyReplicas >="
	i := New(fake.NewClientBuilder().WithScheme(s).WithObjects(ic).Build())
	ctx := context.Background()
	if n, _, ok, err := i.Replicas(ctx, widget(nil)); err != nil || !ok || n != 5 {
		t.Errorf("Replicas = %d, %v, %v; want 5 from the operation that compiles", n, ok, err)
	}
	_, _, _, err := i.Observe(ctx, widget(map[string]any{"readyReplicas": int64(5)}))
	var failed *Error
	if !errors.As(err, &failed) || failed.Operation != OpHealthInterpretation || !strings.Contains(err.Error(), "Syntax error") {
		t.Errorf("Observe error %v, want the health operation's compile error", err)
	}
}
