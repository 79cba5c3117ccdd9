package override

import (
	"encoding/json"
	"testing"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// FuzzApply feeds arbitrary overrider inputs to Apply: it must never panic, and on error the manifest must
// be exactly as it was.
func FuzzApply(f *testing.F) {
	f.Add("/spec/replicas", "replace", "5", "Registry", "replace", "mirror", "web", "/data/x")
	f.Add("/metadata/labels/a~1b", "add", `"v"`, "Tag", "remove", "", "nope", "/spec")
	f.Add("/spec/template/spec/containers/0", "remove", "", "Repository", "add", "-x", "web", "")
	f.Fuzz(func(t *testing.T, path, op, value, component, imageOp, imageValue, container, fieldPath string) {
		m := manifest(t, web)
		before, _ := m.MarshalJSON()
		o := policyv1alpha1.Overriders{
			ImageOverrider: []policyv1alpha1.ImageOverrider{{Component: policyv1alpha1.ImageComponent(component), Operator: policyv1alpha1.OverriderOperator(imageOp), Value: imageValue}},
			ArgsOverrider:  []policyv1alpha1.CommandArgsOverrider{{ContainerName: container, Operator: "add", Value: []string{value}}},
			FieldOverrider: []policyv1alpha1.FieldOverrider{{FieldPath: fieldPath, YAML: []policyv1alpha1.JSONPatchOperation{{SubPath: path, Operator: policyv1alpha1.OverriderOperator(op), Value: rawJSON(value)}}}},
			Plaintext:      []policyv1alpha1.PlaintextOverrider{{Path: path, Operator: policyv1alpha1.OverriderOperator(op), Value: rawJSON(value)}},
		}
		if !json.Valid([]byte(value)) {
			o.Plaintext[0].Value, o.FieldOverrider[0].YAML[0].Value = nil, nil
		}
		policies := []Policy{{Name: "fuzz", Spec: &policyv1alpha1.OverrideSpec{OverrideRules: []policyv1alpha1.RuleWithCluster{{Overriders: o}}}}}
		if _, err := Apply(m, &clusterv1alpha1.Cluster{}, policies); err != nil {
			after, _ := m.MarshalJSON()
			if string(before) != string(after) {
				t.Fatalf("failed override changed the manifest: %v", err)
			}
		}
	})
}
