package interpreter

import (
	"errors"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
)

// luaHealth compiles script as the health operation of the widgets customization.
func luaHealth(t *testing.T, script string) (*Customization, error) {
	t.Helper()
	ic := widgetIC(t, widgetCustomization)
	ic.Spec.Customizations = configv1alpha1.CustomizationRules{HealthInterpretation: &configv1alpha1.Expression{LuaScript: script}}
	c, errs := Compile(ic)
	return c, errs.ToAggregate()
}

// A script cannot reach the host, load code, run forever, recurse without end or allocate without bound:
// each attempt ends in an error of the customization.
func TestLuaSandbox(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"os.execute", `os.execute("touch /tmp/flotilla-lua-escaped")`, "non-table object(nil)"},
		{"io.open", `io.open("/etc/passwd")`, "non-table object(nil)"},
		{"require", `require("os")`, "attempt to call a non-function object"},
		{"dofile", `dofile("/etc/passwd")`, "attempt to call a non-function object"},
		{"loadstring", `loadstring("return 1")()`, "attempt to call a non-function object"},
		{"debug", `debug.getinfo(1)`, "non-table object(nil)"},
		{"infinite loop", `while true do end`, "context deadline exceeded"},
		{"endless recursion", `local function f(n) return 1 + f(n + 1) end f(1)`, "stack overflow"},
		{"huge string.rep", `local s = string.rep("x", 1e10)`, "would exceed"},
		{"huge rep as a method", `local s = ("xy"):rep(1e9)`, "would exceed"},
		// Backtracking patterns take hours in one library call (gopher-lua's matcher never looked at the time).
		{"backtracking string.match", `string.match("x"..(" "):rep(200000).."y", "^%s*(.-)%s*$")`,
			"string.match: the pattern was still matching at the evaluation's time limit"},
		{"backtracking string.find", `string.find(("a"):rep(5000), "a*a*a*b")`, "string.find: the pattern was still matching"},
		{"backtracking string.gmatch", `for w in (("a"):rep(5000)):gmatch("a*a*a*b") do end`, "string.gmatch: the pattern was still matching"},
		{"backtracking string.gsub", `string.gsub(("a"):rep(5000), "a*a*a*b", "")`, "string.gsub: the pattern was still matching"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := luaHealth(t, "function InterpretHealth(observedObj)\n  "+tc.body+"\n  return true\nend\n")
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Healthy(widget(nil))
			var failed *Error
			if !errors.As(err, &failed) || failed.Customization != "widgets" || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want an *Error of widgets saying %q", err, tc.want)
			}
		})
	}
}

// A script is loaded when the customization is compiled (at admission): one that does not parse, lacks the
// operation's function, or does not finish loading is refused with the field and the line.
func TestLuaCompileErrors(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		want         []string
	}{
		{"syntax", "function InterpretHealth(observedObj)\n  return observedObj.status. >= 1\nend\n",
			[]string{"spec.customizations.healthInterpretation.luaScript", "luaScript line:2"}},
		{"no function", "function GetReplicas(obj)\n  return 1\nend\n", []string{"does not define function InterpretHealth"}},
		{"error at top level", "error('broken')\n", []string{"luaScript:1: broken"}},
		{"endless top level", "while true do end\n", []string{"context deadline exceeded"}},
		{"backtracking pattern at top level", `local trimmed = string.match("x"..(" "):rep(200000).."y", "^%s*(.-)%s*$")`,
			[]string{"string.match: the pattern was still matching at the evaluation's time limit"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := luaHealth(t, tc.script)
			if err == nil {
				t.Fatal("compiled")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	ic := widgetIC(t, widgetCustomization)
	ic.Spec.Customizations.HealthInterpretation.LuaScript = "function InterpretHealth(o) return true end"
	if _, errs := Compile(ic); len(errs) != 1 || !strings.Contains(errs[0].Error(), "exactly one of cel and luaScript") {
		t.Errorf("errors %v, want exactly one of cel and luaScript", errs)
	}
}

// What a Karmada function returns that Flotilla cannot apply fails the operation with a clear error.
func TestLuaResultsFlotillaRefuses(t *testing.T) {
	compile := func(rules configv1alpha1.CustomizationRules) *Customization {
		ic := widgetIC(t, widgetCustomization)
		ic.Spec.Customizations = rules
		c, errs := Compile(ic)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		return c
	}
	for _, tc := range []struct {
		name string
		run  func() error
		want string
	}{
		{"retaining another field's value", func() error {
			c := compile(configv1alpha1.CustomizationRules{Retention: &configv1alpha1.Expression{LuaScript: `
function Retain(desiredObj, observedObj)
  desiredObj.spec.size = observedObj.spec.replicas
  return desiredObj
end`}})
			_, err := c.Retained(widget(nil))
			return err
		}, "copies observedObj.spec.replicas into spec.size"},
		{"revising the name", func() error {
			c := compile(configv1alpha1.CustomizationRules{ReplicaRevision: &configv1alpha1.Expression{LuaScript: `
function ReviseReplica(obj, desiredReplica)
  obj.metadata.name = "other"
  return obj
end`}})
			return c.ReviseReplicas(widget(nil), 1)
		}, "identifies the object"},
		{"revising by removing", func() error {
			c := compile(configv1alpha1.CustomizationRules{ReplicaRevision: &configv1alpha1.Expression{LuaScript: `
function ReviseReplica(obj, desiredReplica)
  obj.spec = nil
  return obj
end`}})
			return c.ReviseReplicas(widget(nil), 1)
		}, "removed spec"},
		{"a function for a value", func() error {
			c := compile(configv1alpha1.CustomizationRules{StatusReflection: &configv1alpha1.Expression{LuaScript: `
function ReflectStatus(observedObj)
  return {f = print or tostring}
end`}})
			_, err := c.ReflectStatus(widget(nil))
			return err
		}, "not a JSON value"},
		{"runtime error with its line", func() error {
			c := compile(configv1alpha1.CustomizationRules{HealthInterpretation: &configv1alpha1.Expression{LuaScript: `
function InterpretHealth(observedObj)
  return observedObj.status.readyReplicas > 0
end`}})
			_, err := c.Healthy(widget(nil))
			return err
		}, "luaScript:3:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			var failed *Error
			if !errors.As(err, &failed) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want an *Error saying %q", err, tc.want)
			}
		})
	}
}

// The documentation's example customization, in CEL and in Lua, gives the same results.
func TestDocumentedExamplesAgree(t *testing.T) {
	doc, err := os.ReadFile("../../docs/interpreter.md")
	if err != nil {
		t.Fatal(err)
	}
	var examples []*Customization
	for _, block := range strings.Split(string(doc), "```yaml\n")[1:] {
		if text, _, _ := strings.Cut(block, "```"); strings.Contains(text, "kind: InterpreterCustomization") {
			examples = append(examples, mustCompile(t, text))
		}
	}
	if len(examples) != 2 || !examples[0].Sets(OpReplicaResource) || !examples[1].Sets(OpReplicaResource) {
		t.Fatalf("%d examples in docs/interpreter.md, want the CEL one and the Lua one", len(examples))
	}
	template := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"replicas": int64(6),
		"template": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": "a", "resources": map[string]any{"requests": map[string]any{"cpu": "100m"}}},
			map[string]any{"name": "b", "resources": map[string]any{"requests": map[string]any{"cpu": "200m", "memory": "1Gi"}}},
			map[string]any{"name": "c"},
		}}}}}}
	member := func(status map[string]any) *unstructured.Unstructured {
		u := template.DeepCopy()
		if status != nil {
			u.Object["status"] = status
		}
		return u
	}
	type results struct {
		Replicas            int32
		Requests            corev1.ResourceList
		Healthy, NotHealthy bool
		Reflected, NoStatus map[string]any
		Aggregated          map[string]any
	}
	var got []results
	for _, c := range examples {
		var r results
		var errs [6]error
		r.Replicas, r.Requests, errs[0] = c.Replicas(template)
		r.Healthy, errs[1] = c.Healthy(member(map[string]any{"readyReplicas": int64(6)}))
		r.NotHealthy, errs[2] = c.Healthy(member(nil))
		r.Reflected, errs[3] = c.ReflectStatus(member(map[string]any{"readyReplicas": int64(2), "other": "x"}))
		r.NoStatus, errs[4] = c.ReflectStatus(member(nil))
		r.Aggregated, errs[5] = c.AggregateStatus(template, []Member{{"a", map[string]any{"readyReplicas": int64(2)}}, {"b", map[string]any{"readyReplicas": int64(3)}}})
		if err := errors.Join(errs[:]...); err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	want := results{Replicas: 6, Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("300m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		Healthy: true, Reflected: map[string]any{"readyReplicas": int64(2)}, NoStatus: map[string]any{"readyReplicas": int64(0)},
		Aggregated: map[string]any{"readyReplicas": int64(5), "clusters": int64(2)}}
	for i, r := range got {
		if !equality.Semantic.DeepEqual(r, want) {
			t.Errorf("%s example: %+v, want %+v", []string{"CEL", "Lua"}[i], r, want)
		}
	}
}

// Karmada's kube helpers answer as Flotilla's built-in rules do for a pod template.
func TestLuaKubeHelpers(t *testing.T) {
	ic := widgetIC(t, widgetCustomization)
	ic.Spec.Customizations = configv1alpha1.CustomizationRules{
		ReplicaResource: &configv1alpha1.Expression{LuaScript: `
function GetReplicas(desiredObj)
  return desiredObj.spec.replicas, kube.accuratePodRequirements(desiredObj.spec.template)
end`},
		DependencyInterpretation: &configv1alpha1.Expression{LuaScript: `
function GetDependencies(desiredObj)
  return kube.getPodDependencies(desiredObj.spec.template, desiredObj.metadata.namespace)
end`},
	}
	c, errs := Compile(ic)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"namespace": "ns"},
		"spec": map[string]any{"replicas": int64(3), "template": map[string]any{"spec": map[string]any{
			"volumes": []any{map[string]any{"name": "v", "configMap": map[string]any{"name": "settings"}}},
			"containers": []any{
				map[string]any{"name": "a", "resources": map[string]any{"requests": map[string]any{"cpu": "100m"}}},
				map[string]any{"name": "b", "envFrom": []any{map[string]any{"secretRef": map[string]any{"name": "token"}}},
					"resources": map[string]any{"requests": map[string]any{"cpu": "200m", "memory": "1Gi"}}},
			}}}}}}
	n, requests, err := c.Replicas(obj)
	if err != nil || n != 3 || !equality.Semantic.DeepEqual(requests, corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("300m"), corev1.ResourceMemory: resource.MustParse("1Gi")}) {
		t.Errorf("Replicas = %d, %v, %v; want 3 with 300m cpu and 1Gi", n, requests, err)
	}
	deps, err := c.Dependencies(obj)
	if want := []Dependency{{APIVersion: "v1", Kind: "ConfigMap", Name: "settings"}, {APIVersion: "v1", Kind: "Secret", Name: "token"}}; err != nil || !equality.Semantic.DeepEqual(deps, want) {
		t.Errorf("Dependencies = %v, %v; want %v", deps, err, want)
	}
	obj.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"] = []any{}
	if deps, err := c.Dependencies(obj); err != nil || len(deps) != 1 {
		t.Errorf("Dependencies without containers = %v, %v; want the ConfigMap", deps, err)
	}
}
