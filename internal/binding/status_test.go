package binding

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

func TestSummarizeKeepsAShortStatus(t *testing.T) {
	many := make([]string, 40)
	for i := range many {
		many[i] = `"f` + string(rune('a'+i/26)) + string(rune('a'+i%26)) + `": 1`
	}
	tests := []struct {
		name   string
		status string
		want   string
	}{
		{"a Deployment's counts without its conditions",
			`{"observedGeneration": 3, "replicas": 2, "readyReplicas": 2, "conditions": [{"type": "Available", "status": "True", "lastUpdateTime": "2026-01-01T00:00:00Z"}]}`,
			`{"observedGeneration":3,"readyReplicas":2,"replicas":2}`},
		{"a phase and a flag, not a nested object", `{"phase": "Bound", "ready": true, "capacity": {"storage": "1Gi"}}`, `{"phase":"Bound","ready":true}`},
		{"long strings and keys are left out", `{"message": "` + strings.Repeat("x", 300) + `", "` + strings.Repeat("k", 70) + `": 1, "replicas": 1}`, `{"replicas":1}`},
		{"at most 32 fields", `{` + strings.Join(many, ",") + `}`, ""},
		{"nothing to keep", `{"conditions": []}`, "null"},
		{"not an object", `[1, 2]`, "null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := summarize(&runtime.RawExtension{Raw: []byte(tt.status)})
			text := "null"
			if got != nil {
				text = string(got.Raw)
			}
			if tt.want == "" {
				if n := strings.Count(text, ":"); n != summaryMaxFields || !strings.Contains(text, `"faa"`) || strings.Contains(text, `"fbh"`) {
					t.Fatalf("got %d fields, want the first %d by key: %s", n, summaryMaxFields, text)
				}
				return
			}
			if text != tt.want {
				t.Fatalf("got %s, want %s", text, tt.want)
			}
		})
	}
	if summarize(nil) != nil {
		t.Fatal("no status summarizes to nothing")
	}
}
