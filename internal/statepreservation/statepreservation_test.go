package statepreservation

import (
	"maps"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

func rule(label, path string) policyv1alpha1.StatePreservationRule {
	return policyv1alpha1.StatePreservationRule{AliasLabelName: label, JSONPath: path}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		rule policyv1alpha1.StatePreservationRule
		want string // part of the error, "" for none
	}{
		{"a field", rule("app.example.io/checkpoint", "{.checkpoint}"), ""},
		{"a nested field", rule("replicas", "{.conditions[?(@.type==\"Available\")].status}"), ""},
		{"an unclosed action", rule("checkpoint", "{.checkpoint"), "jsonPath"},
		{"a bad filter", rule("checkpoint", "{.conditions[?(@.type==]}"), "jsonPath"},
		{"a bad index", rule("checkpoint", "{.items[x]}"), "jsonPath"},
		{"a label key that is not one", rule("not a label", "{.checkpoint}"), "aliasLabelName"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := Validate(&policyv1alpha1.StatePreservation{Rules: []policyv1alpha1.StatePreservationRule{tt.rule}}, field.NewPath("spec"))
			switch {
			case tt.want == "" && len(errs) > 0:
				t.Errorf("refused: %v", errs)
			case tt.want != "" && (len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), "spec.rules[0]."+tt.want)):
				t.Errorf("errors %v, want one for %s", errs, tt.want)
			}
		})
	}
}

func TestExtract(t *testing.T) {
	status := map[string]any{
		"checkpoint":    "ckpt-42",
		"readyReplicas": int64(3),
		"long":          strings.Repeat("x", 70),
		"conditions":    []any{map[string]any{"type": "Available", "status": "False"}, map[string]any{"type": "Progressing", "status": "True"}},
	}
	tests := []struct {
		name         string
		rules        []policyv1alpha1.StatePreservationRule
		status       map[string]any
		want         map[string]string
		wantProblems []string
	}{
		{"a string and a number", []policyv1alpha1.StatePreservationRule{rule("checkpoint", "{.checkpoint}"), rule("ready", "{.readyReplicas}")}, status,
			map[string]string{"checkpoint": "ckpt-42", "ready": "3"}, nil},
		{"a filter", []policyv1alpha1.StatePreservationRule{rule("available", `{.conditions[?(@.type=="Available")].status}`)}, status,
			map[string]string{"available": "False"}, nil},
		{"a missing field is reported", []policyv1alpha1.StatePreservationRule{rule("checkpoint", "{.checkpoint}"), rule("offset", "{.offset}")}, status,
			map[string]string{"checkpoint": "ckpt-42"}, []string{"offset ({.offset})"}},
		{"several values are reported", []policyv1alpha1.StatePreservationRule{rule("types", "{.conditions[*].type}")}, status,
			map[string]string{}, []string{"found 2 values"}},
		{"a value too long for a label is reported", []policyv1alpha1.StatePreservationRule{rule("long", "{.long}")}, status,
			map[string]string{}, []string{"no label value"}},
		{"no status is reported", []policyv1alpha1.StatePreservationRule{rule("checkpoint", "{.checkpoint}")}, nil,
			map[string]string{}, []string{"reported no status"}},
		{"a path that does not parse is reported, not a panic", []policyv1alpha1.StatePreservationRule{rule("checkpoint", "{.checkpoint")}, status,
			map[string]string{}, []string{"checkpoint"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, problems := Extract(tt.rules, tt.status)
			if !maps.Equal(got, tt.want) {
				t.Errorf("labels %v, want %v", got, tt.want)
			}
			if len(problems) != len(tt.wantProblems) {
				t.Fatalf("problems %q, want %d", problems, len(tt.wantProblems))
			}
			for i, p := range tt.wantProblems {
				if !strings.Contains(problems[i], p) {
					t.Errorf("problem %q, want it to say %q", problems[i], p)
				}
			}
		})
	}
}
