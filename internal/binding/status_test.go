package binding

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
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

func TestAggregate(t *testing.T) {
	spec := func(clusters ...string) *workv1alpha1.ResourceBindingSpec {
		s := &workv1alpha1.ResourceBindingSpec{}
		for _, c := range clusters {
			s.Clusters = append(s.Clusters, workv1alpha1.TargetCluster{Name: c})
		}
		return s
	}
	// work is the Work of cluster, rendered from template generation 2, as its agent reported it.
	work := func(cluster string, applied bool, health workv1alpha1.ResourceHealth) workv1alpha1.Work {
		manifest := `{"metadata":{"annotations":{"` + workv1alpha1.AnnotationTemplateGeneration + `":"2"}}}`
		w := workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: clusterv1alpha1.ClusterNamespace(cluster), Generation: 1},
			Spec: workv1alpha1.WorkSpec{Workload: workv1alpha1.WorkloadTemplate{Manifests: []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: []byte(manifest)}}}}}}
		status := metav1.ConditionFalse
		if applied {
			status = metav1.ConditionTrue
		}
		w.Status.Conditions = []metav1.Condition{{Type: workv1alpha1.WorkConditionApplied, Status: status, ObservedGeneration: 1, Message: "boom"}}
		w.Status.ManifestStatuses = []workv1alpha1.ManifestStatus{{Applied: applied, Health: health, Status: &runtime.RawExtension{Raw: []byte(`{"readyReplicas":2}`)},
			Conditions: []metav1.Condition{{Type: workv1alpha1.WorkConditionApplied, Status: status, Message: "boom"},
				{Type: workv1alpha1.ManifestConditionObserved, Status: metav1.ConditionTrue}}}}
		return w
	}
	// divided places 4 replicas on a, divided; share is a's Work of a Deployment with replicas.
	divided := spec("a")
	divided.Clusters[0].Replicas = 4
	divided.Placement = &policyv1alpha1.Placement{ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
		ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingDivided}}
	share := func(replicas string) workv1alpha1.Work {
		w := work("a", true, workv1alpha1.ResourceHealthy)
		w.Spec.Workload.Manifests[0].Raw = []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{"` +
			workv1alpha1.AnnotationTemplateGeneration + `":"2"}},"spec":{"replicas":` + replicas + `}}`)
		return w
	}
	changed := work("a", true, workv1alpha1.ResourceHealthy)
	changed.Generation = 2
	tests := []struct {
		name             string
		spec             *workv1alpha1.ResourceBindingSpec
		works            []workv1alpha1.Work
		applied, healthy metav1.ConditionStatus
		caughtUp         bool
		items, members   int
		firstHealth      workv1alpha1.ResourceHealth
	}{
		{"not placed yet", spec(), nil, metav1.ConditionFalse, metav1.ConditionFalse, false, 0, 0, ""},
		{"placed, no Work yet", spec("a", "b"), nil, metav1.ConditionFalse, metav1.ConditionFalse, false, 2, 0, workv1alpha1.ResourceUnknown},
		{"applied and healthy everywhere", spec("a", "b"), []workv1alpha1.Work{work("a", true, workv1alpha1.ResourceHealthy), work("b", true, workv1alpha1.ResourceHealthy)},
			metav1.ConditionTrue, metav1.ConditionTrue, true, 2, 2, workv1alpha1.ResourceHealthy},
		{"one cluster not healthy", spec("a", "b"), []workv1alpha1.Work{work("a", true, workv1alpha1.ResourceUnhealthy), work("b", true, workv1alpha1.ResourceHealthy)},
			metav1.ConditionTrue, metav1.ConditionFalse, true, 2, 2, workv1alpha1.ResourceUnhealthy},
		{"one cluster failed to apply", spec("a"), []workv1alpha1.Work{work("a", false, workv1alpha1.ResourceUnknown)},
			metav1.ConditionFalse, metav1.ConditionFalse, false, 1, 1, workv1alpha1.ResourceUnknown},
		{"the Work of a cluster being evicted counts for nothing", spec("a"), []workv1alpha1.Work{work("a", true, workv1alpha1.ResourceHealthy), work("old", false, workv1alpha1.ResourceUnhealthy)},
			metav1.ConditionTrue, metav1.ConditionTrue, true, 1, 1, workv1alpha1.ResourceHealthy},
		{"a Work changed since its agent reported is not healthy yet", spec("a"), []workv1alpha1.Work{changed},
			metav1.ConditionTrue, metav1.ConditionFalse, false, 1, 1, workv1alpha1.ResourceUnknown},
		{"a divided Work that still carries the old share is not healthy yet", divided, []workv1alpha1.Work{share("2")},
			metav1.ConditionTrue, metav1.ConditionFalse, true, 1, 1, workv1alpha1.ResourceUnknown},
		{"a divided Work that carries the cluster's share is healthy", divided, []workv1alpha1.Work{share("4")},
			metav1.ConditionTrue, metav1.ConditionTrue, true, 1, 1, workv1alpha1.ResourceHealthy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sum := aggregate(tt.spec, 7, 2, tt.works)
			if sum.applied.Status != tt.applied || sum.healthy.Status != tt.healthy || sum.caughtUp != tt.caughtUp {
				t.Fatalf("FullyApplied %s, Healthy %s, caught up %v; want %s, %s, %v", sum.applied.Status, sum.healthy.Status, sum.caughtUp, tt.applied, tt.healthy, tt.caughtUp)
			}
			if sum.applied.ObservedGeneration != 7 || sum.healthy.ObservedGeneration != 7 {
				t.Fatal("the conditions do not carry the binding's generation")
			}
			if len(sum.items) != tt.items || len(sum.members) != tt.members {
				t.Fatalf("%d items and %d member statuses, want %d and %d", len(sum.items), len(sum.members), tt.items, tt.members)
			}
			if tt.items > 0 && sum.items[0].Health != tt.firstHealth {
				t.Fatalf("health %s, want %s", sum.items[0].Health, tt.firstHealth)
			}
			if wantMessage := !tt.caughtUp && tt.applied == metav1.ConditionFalse && tt.members > 0; tt.items > 0 && wantMessage != (sum.items[0].AppliedMessage == "boom") {
				t.Fatalf("applied message %q, want the Work's", sum.items[0].AppliedMessage)
			}
		})
	}
}

func TestOwnedConditions(t *testing.T) {
	earlier := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	current := []metav1.Condition{
		{Type: workv1alpha1.ConditionScheduled, Status: metav1.ConditionTrue, Reason: "Scheduled", LastTransitionTime: earlier},
		{Type: workv1alpha1.ConditionHealthy, Status: metav1.ConditionFalse, Reason: "NotHealthy", Message: "not healthy yet in a", ObservedGeneration: 2, LastTransitionTime: earlier},
	}
	healthy := metav1.Condition{Type: workv1alpha1.ConditionHealthy, Status: metav1.ConditionFalse, Reason: "NotHealthy", Message: "not healthy yet in a", ObservedGeneration: 2}
	got, same := ownedConditions(current, healthy)
	if !same || len(got) != 1 || !got[0].LastTransitionTime.Equal(&earlier) {
		t.Fatalf("an unchanged condition: same %v, %+v", same, got)
	}
	healthy.Message = "not healthy yet in a, b"
	if got, same = ownedConditions(current, healthy); same || !got[0].LastTransitionTime.Equal(&earlier) {
		t.Fatalf("a new message keeps the transition time but is written: same %v, %+v", same, got)
	}
	healthy.Status = metav1.ConditionTrue
	if got, same = ownedConditions(current, healthy); same || got[0].LastTransitionTime.Equal(&earlier) {
		t.Fatalf("a transition: same %v, %+v", same, got)
	}
	applied := metav1.Condition{Type: workv1alpha1.ConditionFullyApplied, Status: metav1.ConditionFalse}
	if got, same = ownedConditions(current, applied); same || len(got) != 1 || got[0].Type != workv1alpha1.ConditionFullyApplied {
		t.Fatalf("a new condition: same %v, %+v (only the owned ones are returned)", same, got)
	}
}
