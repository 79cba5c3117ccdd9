package execution

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

func parseYAML(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	data, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestFeedbackValues: well-known fields of Deployments, Jobs and Pods as OCM documents them, JSON paths under
// the status with each value type, nothing outside the status (a Secret's data), missing fields returning
// nothing, and rules that cannot be evaluated named in the error
// while the other values still come back.
func TestFeedbackValues(t *testing.T) {
	deployment := `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {replicas: 3, paused: false},
	  status: {replicas: 3, readyReplicas: 2, terminating: false, conditions: [{type: Available, status: "True"}, {type: Progressing, status: "True"}]}}`
	job := `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, status: {succeeded: 1, conditions: [{type: Complete, status: "True"}]}}`
	pod := `{apiVersion: v1, kind: Pod, metadata: {name: p}, status: {phase: Running, conditions: [{type: Ready, status: "False"}]}}`
	wellKnown := []workv1alpha1.FeedbackRule{{Type: workv1alpha1.FeedbackWellKnownStatus}}
	paths := func(p ...string) []workv1alpha1.FeedbackRule {
		rule := workv1alpha1.FeedbackRule{Type: workv1alpha1.FeedbackJSONPaths}
		for i := 0; i < len(p); i += 2 {
			rule.JSONPaths = append(rule.JSONPaths, workv1alpha1.JSONPath{Name: p[i], Path: p[i+1]})
		}
		return []workv1alpha1.FeedbackRule{rule}
	}
	tests := []struct {
		name    string
		obj     string
		rules   []workv1alpha1.FeedbackRule
		want    string // the values as JSON
		wantErr string
	}{
		{"deployment well-known, availableReplicas missing", deployment, wellKnown,
			`[{"name":"ReadyReplicas","fieldValue":{"type":"Integer","integer":2}},{"name":"Replicas","fieldValue":{"type":"Integer","integer":3}}]`, ""},
		{"job well-known", job, wellKnown,
			`[{"name":"JobComplete","fieldValue":{"type":"String","string":"True"}},{"name":"JobSucceeded","fieldValue":{"type":"Integer","integer":1}}]`, ""},
		{"pod well-known", pod, wellKnown,
			`[{"name":"PodReady","fieldValue":{"type":"String","string":"False"}},{"name":"PodPhase","fieldValue":{"type":"String","string":"Running"}}]`, ""},
		{"a kind with no well-known fields", `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}}`, wellKnown, `null`, "ConfigMap has no well-known status fields"},
		{"json paths of each type", deployment, paths("replicas", ".replicas", "terminating", ".terminating",
			"available", `.conditions[?(@.type=="Available")].status`, "types", ".conditions[*].type", "missing", ".nothing"),
			`[{"name":"replicas","fieldValue":{"type":"Integer","integer":3}},{"name":"terminating","fieldValue":{"type":"Boolean","boolean":false}},` +
				`{"name":"available","fieldValue":{"type":"String","string":"True"}},{"name":"types","fieldValue":{"type":"JsonRaw","jsonRaw":"[\"Available\",\"Progressing\"]"}}]`, ""},
		{"an object as JSON", deployment, paths("first", ".conditions[0]"),
			`[{"name":"first","fieldValue":{"type":"JsonRaw","jsonRaw":"{\"status\":\"True\",\"type\":\"Available\"}"}}]`, ""},
		{"nothing outside the status", deployment, paths("spec", ".spec.replicas", "name", ".metadata.name"), `null`, ""},
		{"an object without status", `{apiVersion: v1, kind: Secret, metadata: {name: s}, data: {password: c2VjcmV0}}`, paths("data", ".data.password"), `null`, ""},
		{"a bad path, the others kept", deployment, paths("bad", ".conditions[", "ready", ".readyReplicas"),
			`[{"name":"ready","fieldValue":{"type":"Integer","integer":2}}]`, "bad: path .conditions["},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			values, err := feedbackValues(parseYAML(t, tt.obj), tt.rules)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("error %v, want %q", err, tt.wantErr)
			}
			got, _ := json.Marshal(values)
			if string(got) != tt.want {
				t.Errorf("values\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestFeedbackValueTooLarge: a list or object larger than a feedback value holds is refused, not cut.
func TestFeedbackValueTooLarge(t *testing.T) {
	obj := parseYAML(t, `{apiVersion: example.com/v1, kind: Report, metadata: {name: c}, status: {big: {text: "`+strings.Repeat("x", 2000)+`"}}}`)
	values, err := feedbackValues(obj, []workv1alpha1.FeedbackRule{{Type: workv1alpha1.FeedbackJSONPaths,
		JSONPaths: []workv1alpha1.JSONPath{{Name: "big", Path: ".big"}}}})
	if len(values) != 0 || err == nil || !strings.Contains(err.Error(), "more than the 1024") {
		t.Errorf("values %v, error %v", values, err)
	}
}

// TestStrategyOf: without a config, Flotilla's forced server-side apply as flotilla; a config's strategy
// with its own force and field manager, which only ServerSideApply takes.
func TestStrategyOf(t *testing.T) {
	no := false
	tests := []struct {
		config *workv1alpha1.ManifestConfig
		want   applyStrategy
	}{
		{nil, applyStrategy{workv1alpha1.UpdateServerSideApply, true, "flotilla"}},
		{&workv1alpha1.ManifestConfig{}, applyStrategy{workv1alpha1.UpdateServerSideApply, true, "flotilla"}},
		{&workv1alpha1.ManifestConfig{UpdateStrategy: &workv1alpha1.UpdateStrategy{Type: workv1alpha1.UpdateCreateOnly}},
			applyStrategy{workv1alpha1.UpdateCreateOnly, true, "flotilla"}},
		{&workv1alpha1.ManifestConfig{UpdateStrategy: &workv1alpha1.UpdateStrategy{Type: workv1alpha1.UpdateServerSideApply,
			ServerSideApply: &workv1alpha1.ServerSideApplyConfig{Force: &no, FieldManager: "flotilla-ocm"}}},
			applyStrategy{workv1alpha1.UpdateServerSideApply, false, "flotilla-ocm"}},
	}
	for i, tt := range tests {
		if got := strategyOf(tt.config); got != tt.want {
			t.Errorf("%d: got %+v, want %+v", i, got, tt.want)
		}
	}
}
