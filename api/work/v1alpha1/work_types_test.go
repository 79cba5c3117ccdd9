package v1alpha1

import (
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestTemplateStatusFoldsAnExpandedWork(t *testing.T) {
	manifest := func(annotations string) Manifest {
		return Manifest{RawExtension: runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","annotations":` + annotations + `}}`)}}
	}
	observed := []metav1.Condition{{Type: ManifestConditionObserved, Status: metav1.ConditionTrue}}
	ms := func(applied bool, health ResourceHealth) ManifestStatus {
		return ManifestStatus{Applied: applied, Health: health, Conditions: observed}
	}
	expanded := `{"` + AnnotationExpanded + `":"HelmRelease","` + AnnotationExpandedVersion + `":"1.2.0"}`
	for _, tc := range []struct {
		name        string
		manifests   int
		annotations string
		statuses    []ManifestStatus
		applied     bool
		health      ResourceHealth
		status      string
	}{
		{"plain Work: the first manifest's", 2, `{}`, []ManifestStatus{ms(true, ResourceHealthy), ms(false, ResourceUnhealthy)}, true, ResourceHealthy, ""},
		{"all healthy", 2, expanded, []ManifestStatus{ms(true, ResourceHealthy), ms(true, ResourceHealthy)}, true, ResourceHealthy,
			`{"version":"1.2.0","objects":2,"appliedObjects":2,"healthyObjects":2,"health":"Healthy"}`},
		{"one unhealthy", 2, expanded, []ManifestStatus{ms(true, ResourceUnknown), ms(true, ResourceUnhealthy)}, true, ResourceUnhealthy,
			`{"version":"1.2.0","objects":2,"appliedObjects":2,"healthyObjects":0,"health":"Unhealthy"}`},
		{"one not reported", 2, expanded, []ManifestStatus{ms(true, ResourceHealthy)}, false, ResourceUnknown,
			`{"version":"1.2.0","objects":2,"appliedObjects":1,"healthyObjects":1,"health":"Unknown"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &Work{Status: WorkStatus{ManifestStatuses: tc.statuses}}
			for range tc.manifests {
				w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, manifest(tc.annotations))
			}
			got := w.TemplateStatus()
			if got.Applied != tc.applied || got.Health != tc.health {
				t.Fatalf("applied %v health %s, want %v %s", got.Applied, got.Health, tc.applied, tc.health)
			}
			if tc.status != "" {
				var a, b any
				_ = json.Unmarshal(got.Status.Raw, &a)
				_ = json.Unmarshal([]byte(tc.status), &b)
				if ra, _ := json.Marshal(a); string(ra) != mustJSON(b) {
					t.Fatalf("status %s, want %s", got.Status.Raw, tc.status)
				}
			}
		})
	}
	if (&Work{}).TemplateStatus() != nil {
		t.Fatal("a Work not reported yet has a report")
	}
}

func mustJSON(v any) string {
	raw, _ := json.Marshal(v)
	return string(raw)
}
