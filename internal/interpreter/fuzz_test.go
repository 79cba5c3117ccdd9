package interpreter

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
)

// FuzzEvaluate compiles an arbitrary expression as every operation and runs each that compiles on an
// arbitrary object, through the entry points the controllers call: nothing panics, and every failure is an
// *Error naming the customization (what the controllers turn into the Interpreted condition).
func FuzzEvaluate(f *testing.F) {
	f.Add(`{"replicas": object.spec.size}`, []byte(`{"spec":{"size":3}}`))
	f.Add(`object.status.readyReplicas >= object.spec.size`, []byte(`{"spec":{"size":3},"status":{"readyReplicas":1}}`))
	f.Add(`["spec.size"]`, []byte(`{"spec":{"size":3}}`))
	f.Add(`{"spec.size": replicas}`, []byte(`{"spec":{}}`))
	f.Add(`{"a": statuses.map(s, s.status.x).sum()}`, []byte(`{"status":{"x":1}}`))
	f.Add(`[{"apiVersion": "v1", "kind": "Secret", "name": object.spec.s}]`, []byte(`{"spec":{"s":7}}`))
	f.Fuzz(func(t *testing.T, expression string, objectJSON []byte) {
		object := map[string]any{}
		if utiljson.Unmarshal(objectJSON, &object) != nil {
			return
		}
		e := &configv1alpha1.Expression{CEL: expression}
		ic := &configv1alpha1.InterpreterCustomization{Spec: configv1alpha1.InterpreterCustomizationSpec{
			Target: configv1alpha1.CustomizationTarget{APIVersion: "example.io/v1", Kind: "Widget"},
			Customizations: configv1alpha1.CustomizationRules{ReplicaResource: e, ReplicaRevision: e, Retention: e,
				StatusReflection: e, StatusAggregation: e, HealthInterpretation: e, DependencyInterpretation: e},
		}}
		ic.Name = "fuzzed"
		c, _ := Compile(ic)
		obj := &unstructured.Unstructured{Object: object}
		status, _ := object["status"].(map[string]any)
		calls := map[Operation]func() error{
			OpReplicaResource:          func() error { _, _, err := c.Replicas(obj.DeepCopy()); return err },
			OpReplicaRevision:          func() error { return c.ReviseReplicas(obj.DeepCopy(), 2) },
			OpRetention:                func() error { _, err := c.Retained(obj.DeepCopy()); return err },
			OpStatusReflection:         func() error { _, err := c.ReflectStatus(obj.DeepCopy()); return err },
			OpStatusAggregation:        func() error { _, err := c.AggregateStatus(obj.DeepCopy(), []Member{{"a", status}}); return err },
			OpHealthInterpretation:     func() error { _, err := c.Healthy(obj.DeepCopy()); return err },
			OpDependencyInterpretation: func() error { _, err := c.Dependencies(obj.DeepCopy()); return err },
		}
		for op, call := range calls {
			if !c.Sets(op) {
				continue
			}
			var failed *Error
			if err := call(); err != nil && (!errors.As(err, &failed) || failed.Customization != "fuzzed") {
				t.Fatalf("%s: %v is not an *Error of the customization", op, err)
			}
		}
	})
}
