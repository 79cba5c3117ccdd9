package binding

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/interpreter"
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
	// divided is a binding of a 4-replica Deployment with replicas on cluster b; moved is its Work on b as
	// rendered with replicas and as its agent reported it (statusOf: the Work generation the report observed).
	divided := func(replicas int32) *workv1alpha1.ResourceBindingSpec {
		return &workv1alpha1.ResourceBindingSpec{Replicas: 4, Clusters: []workv1alpha1.TargetCluster{{Name: "b", Replicas: replicas}}}
	}
	moved := func(replicas, generation, statusOf int64) workv1alpha1.Work {
		w := work("b", true, workv1alpha1.ResourceHealthy)
		w.Generation = generation
		w.Spec.Workload.Manifests[0].Raw = []byte(fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{%q:"2"}},"spec":{"replicas":%d}}`,
			workv1alpha1.AnnotationTemplateGeneration, replicas))
		w.Status.Conditions[0].ObservedGeneration = statusOf
		return w
	}
	tests := []struct {
		name             string
		spec             *workv1alpha1.ResourceBindingSpec
		works            []workv1alpha1.Work
		applied, healthy metav1.ConditionStatus
		caughtUp         bool
		items, members   int
		firstHealth      workv1alpha1.ResourceHealth
		stale            bool // Healthy lost only for Works changed since their healthy report
	}{
		{"not placed yet", spec(), nil, metav1.ConditionFalse, metav1.ConditionFalse, false, 0, 0, "", false},
		{"placed, no Work yet", spec("a", "b"), nil, metav1.ConditionFalse, metav1.ConditionFalse, false, 2, 0, workv1alpha1.ResourceUnknown, false},
		{"applied and healthy everywhere", spec("a", "b"), []workv1alpha1.Work{work("a", true, workv1alpha1.ResourceHealthy), work("b", true, workv1alpha1.ResourceHealthy)},
			metav1.ConditionTrue, metav1.ConditionTrue, true, 2, 2, workv1alpha1.ResourceHealthy, false},
		{"one cluster not healthy", spec("a", "b"), []workv1alpha1.Work{work("a", true, workv1alpha1.ResourceUnhealthy), work("b", true, workv1alpha1.ResourceHealthy)},
			metav1.ConditionTrue, metav1.ConditionFalse, true, 2, 2, workv1alpha1.ResourceUnhealthy, false},
		{"one cluster failed to apply", spec("a"), []workv1alpha1.Work{work("a", false, workv1alpha1.ResourceUnknown)},
			metav1.ConditionFalse, metav1.ConditionFalse, false, 1, 1, workv1alpha1.ResourceUnknown, false},
		{"the Work of a cluster being evicted counts for nothing", spec("a"), []workv1alpha1.Work{work("a", true, workv1alpha1.ResourceHealthy), work("old", false, workv1alpha1.ResourceUnhealthy)},
			metav1.ConditionTrue, metav1.ConditionTrue, true, 1, 1, workv1alpha1.ResourceHealthy, false},
		{"a Work not yet rendered for the new replicas reports the copy before the move", divided(4), []workv1alpha1.Work{moved(2, 1, 1)},
			metav1.ConditionTrue, metav1.ConditionFalse, true, 1, 1, workv1alpha1.ResourceHealthy, false},
		{"a report of the Work's previous generation is about the copy before the move", divided(4), []workv1alpha1.Work{moved(4, 2, 1)},
			metav1.ConditionTrue, metav1.ConditionFalse, false, 1, 1, workv1alpha1.ResourceHealthy, true},
		{"a changed Work whose objects were reported unhealthy", divided(4), []workv1alpha1.Work{func() workv1alpha1.Work {
			w := moved(4, 2, 1)
			w.Status.ManifestStatuses[0].Health = workv1alpha1.ResourceUnhealthy
			return w
		}()}, metav1.ConditionTrue, metav1.ConditionFalse, false, 1, 1, workv1alpha1.ResourceUnhealthy, false},
		{"one changed Work, one cluster not healthy", spec("a", "b"), []workv1alpha1.Work{work("a", true, workv1alpha1.ResourceUnhealthy), moved(2, 2, 1)},
			metav1.ConditionTrue, metav1.ConditionFalse, false, 2, 2, workv1alpha1.ResourceUnhealthy, false},
		{"a report of the new copy counts", divided(4), []workv1alpha1.Work{moved(4, 2, 2)},
			metav1.ConditionTrue, metav1.ConditionTrue, true, 1, 1, workv1alpha1.ResourceHealthy, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sum := aggregate(tt.spec, 7, 2, tt.works, func(w *workv1alpha1.Work) rendered {
				m, _ := readRendered(w, func(m *unstructured.Unstructured) (int32, bool, error) {
					n, _, ok := interpreter.Replicas(m)
					return n, ok, nil
				})
				return m
			})
			if sum.applied.Status != tt.applied || sum.healthy.Status != tt.healthy || sum.caughtUp != tt.caughtUp || sum.stale != tt.stale {
				t.Fatalf("FullyApplied %s, Healthy %s, caught up %v, stale %v; want %s, %s, %v, %v", sum.applied.Status, sum.healthy.Status, sum.caughtUp, sum.stale,
					tt.applied, tt.healthy, tt.caughtUp, tt.stale)
			}
			if sum.applied.ObservedGeneration != 7 || sum.healthy.ObservedGeneration != 7 {
				t.Fatal("the conditions do not carry the binding's generation")
			}
			reported := 0
			for _, m := range sum.members {
				if m.Status != nil {
					reported++
				}
			}
			if len(sum.items) != tt.items || len(sum.members) != tt.items || reported != tt.members {
				t.Fatalf("%d items, %d members of which %d reported a status; want %d, %d, %d", len(sum.items), len(sum.members), reported, tt.items, tt.items, tt.members)
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

// TestHealthSince: a cluster's health transition time stays while its health does, and moves when it
// changes; application failover measures unhealth from it.
func TestHealthSince(t *testing.T) {
	earlier := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	now := metav1.NewTime(earlier.Add(time.Hour))
	previous := []workv1alpha1.AggregatedStatusItem{
		{ClusterName: "same", Health: workv1alpha1.ResourceUnhealthy, HealthTransitionTime: &earlier},
		{ClusterName: "changed", Health: workv1alpha1.ResourceUnknown, HealthTransitionTime: &earlier},
		{ClusterName: "untimed", Health: workv1alpha1.ResourceUnhealthy},
	}
	items := []workv1alpha1.AggregatedStatusItem{
		{ClusterName: "same", Health: workv1alpha1.ResourceUnhealthy},
		{ClusterName: "changed", Health: workv1alpha1.ResourceUnhealthy},
		{ClusterName: "untimed", Health: workv1alpha1.ResourceUnhealthy},
		{ClusterName: "new", Health: workv1alpha1.ResourceHealthy},
	}
	healthSince(items, previous, now)
	want := map[string]metav1.Time{"same": earlier, "changed": now, "untimed": now, "new": now}
	for _, item := range items {
		if item.HealthTransitionTime == nil || !item.HealthTransitionTime.Equal(ptrTime(want[item.ClusterName])) {
			t.Errorf("%s: since %v, want %v", item.ClusterName, item.HealthTransitionTime, want[item.ClusterName])
		}
	}
}

func ptrTime(t metav1.Time) *metav1.Time { return &t }

func TestLargeBindingsAreSummedAtMostEveryInterval(t *testing.T) {
	for _, tt := range []struct {
		clusters int
		want     time.Duration
	}{{2, 0}, {50, 0}, {51, 102 * time.Millisecond}, {1000, 2 * time.Second}, {5000, 10 * time.Second}, {20000, 10 * time.Second}} {
		if got := aggregationInterval(tt.clusters); got != tt.want {
			t.Errorf("aggregationInterval(%d) = %s, want %s", tt.clusters, got, tt.want)
		}
	}

	r := &StatusController[*workv1alpha1.ResourceBinding]{}
	key := types.NamespacedName{Namespace: "web", Name: "api-deployment"}
	now := time.Now()
	if wait := r.untilDue(key, 1000, now); wait != 0 {
		t.Fatalf("a binding never written waits %s, want 0", wait)
	}
	r.written = map[types.NamespacedName]time.Time{key: now.Add(-500 * time.Millisecond)}
	if wait := r.untilDue(key, 1000, now); wait != 1500*time.Millisecond {
		t.Fatalf("a binding on 1,000 clusters written 0.5 s ago waits %s, want 1.5 s", wait)
	}
	if wait := r.untilDue(key, 10, now); wait != 0 {
		t.Fatalf("a binding on 10 clusters written 0.5 s ago waits %s, want 0", wait)
	}
	if wait := r.untilDue(key, 1000, now.Add(3*time.Second)); wait != 0 {
		t.Fatalf("a binding on 1,000 clusters written 3.5 s ago waits %s, want 0", wait)
	}
	r.forget(key, "")
	if wait := r.untilDue(key, 1000, now); wait != 0 {
		t.Fatalf("a forgotten binding waits %s, want 0", wait)
	}
}

// TestOnlyLossesAreEvents: an event is recorded when a condition that was True at a generation turns False at
// that same generation; becoming True, and a new generation rolling out, are no event.
func TestOnlyLossesAreEvents(t *testing.T) {
	cond := func(status metav1.ConditionStatus, generation int64) *metav1.Condition {
		return &metav1.Condition{Type: workv1alpha1.ConditionHealthy, Status: status, ObservedGeneration: generation}
	}
	tests := []struct {
		name   string
		before *metav1.Condition
		now    *metav1.Condition
		want   bool
	}{
		{"a new binding not yet healthy", nil, cond(metav1.ConditionFalse, 1), false},
		{"a new binding healthy at once", nil, cond(metav1.ConditionTrue, 1), false},
		{"becoming healthy", cond(metav1.ConditionFalse, 1), cond(metav1.ConditionTrue, 1), false},
		{"a new generation rolling out", cond(metav1.ConditionTrue, 1), cond(metav1.ConditionFalse, 2), false},
		{"healthy no longer at the same generation", cond(metav1.ConditionTrue, 2), cond(metav1.ConditionFalse, 2), true},
		{"unknown at the same generation", cond(metav1.ConditionTrue, 2), cond(metav1.ConditionUnknown, 2), true},
		{"still healthy", cond(metav1.ConditionTrue, 2), cond(metav1.ConditionTrue, 2), false},
	}
	for _, tt := range tests {
		if got := lost(tt.before, *tt.now); got != tt.want {
			t.Errorf("%s: lost = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestFirstStatusWaitsForAResult: a binding placed for the first time gets no summed status while its Works
// only list their objects as about to be applied, for waitingGrace after it was created, scheduled and its
// newest Work created; an apply, a failure, a failed customization, a binding already reported and a grace that is over
// are written at once.
func TestFirstStatusWaitsForAResult(t *testing.T) {
	now := time.Now()
	scheduledAt := func(at time.Time) *workv1alpha1.ResourceBinding {
		b := &workv1alpha1.ResourceBinding{}
		b.Status.Conditions = []metav1.Condition{{Type: workv1alpha1.ConditionScheduled, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(at)}}
		return b
	}
	work := func(created time.Time, change func(*workv1alpha1.Work)) workv1alpha1.Work {
		w := workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)}}
		if change != nil {
			change(&w)
		}
		return w
	}
	manifest := func(applied bool, reason string) func(*workv1alpha1.Work) {
		return func(w *workv1alpha1.Work) {
			w.Status.ManifestStatuses = []workv1alpha1.ManifestStatus{{Applied: applied,
				Conditions: []metav1.Condition{{Type: workv1alpha1.WorkConditionApplied, Status: metav1.ConditionUnknown, Reason: reason}}}}
		}
	}
	intent := manifest(false, workv1alpha1.ManifestReasonApplying)
	for _, tt := range []struct {
		name  string
		b     *workv1alpha1.ResourceBinding
		works []workv1alpha1.Work
		sum   aggregation
		want  time.Duration
	}{
		{"no Work yet", scheduledAt(now.Add(-time.Second)), nil, aggregation{}, 4 * time.Second},
		{"Works about to be applied", scheduledAt(now.Add(-time.Second)), []workv1alpha1.Work{work(now.Add(-2*time.Second), intent), work(now, nil)},
			aggregation{}, waitingGrace},
		{"one Work applied", scheduledAt(now), []workv1alpha1.Work{work(now, intent), work(now, manifest(true, "Applied"))}, aggregation{}, 0},
		{"an apply failed", scheduledAt(now), []workv1alpha1.Work{work(now, manifest(false, "ApplyFailed"))}, aggregation{}, 0},
		{"a Work suspended", scheduledAt(now), []workv1alpha1.Work{work(now, func(w *workv1alpha1.Work) {
			w.Status.Conditions = []metav1.Condition{{Type: workv1alpha1.WorkConditionApplied, Status: metav1.ConditionFalse, Reason: "Suspended"}}
		})}, aggregation{}, 0},
		{"a customization failed", scheduledAt(now), nil,
			aggregation{interpreted: &metav1.Condition{Type: workv1alpha1.ConditionInterpreted, Status: metav1.ConditionFalse}}, 0},
		{"the grace is over", scheduledAt(now.Add(-10 * time.Second)), []workv1alpha1.Work{work(now.Add(-6*time.Second), intent)}, aggregation{}, 0},
		{"placed, not scheduled yet", &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(now.Add(-2 * time.Second))}},
			nil, aggregation{}, 3 * time.Second},
		{"placed long ago, never scheduled", &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(now.Add(-time.Minute))}},
			nil, aggregation{}, 0},
		{"reported before", func() *workv1alpha1.ResourceBinding {
			b := scheduledAt(now)
			b.Status.Conditions = append(b.Status.Conditions, metav1.Condition{Type: workv1alpha1.ConditionFullyApplied, Status: metav1.ConditionTrue})
			return b
		}(), []workv1alpha1.Work{work(now, intent)}, aggregation{}, 0},
	} {
		got := untilReported(tt.b, tt.works, tt.sum, now)
		if d := got - tt.want; d < -time.Millisecond || d > time.Millisecond {
			t.Errorf("%s: waits %s, want %s", tt.name, got, tt.want)
		}
	}
}

// TestTransientSumsAreHeld: a sum applied in some clusters and only about to be applied in the others, and
// a sum that lost Healthy only for Works changed since their healthy report, are held for transientHold from
// when they were first seen, then written; a complete sum, a failure, any other loss, a sum applied nowhere,
// and a catching-up sum of a binding that changed or has an eviction task are written at once.
func TestTransientSumsAreHeld(t *testing.T) {
	now := time.Now()
	work := func(cluster string, applied bool, reason string) workv1alpha1.Work {
		w := workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: clusterv1alpha1.ClusterNamespace(cluster)}}
		w.Status.ManifestStatuses = []workv1alpha1.ManifestStatus{{Applied: applied,
			Conditions: []metav1.Condition{{Type: workv1alpha1.WorkConditionApplied, Status: metav1.ConditionUnknown, Reason: reason}}}}
		return w
	}
	sum := func(applied ...bool) aggregation {
		s := aggregation{applied: metav1.Condition{Type: workv1alpha1.ConditionFullyApplied, Status: metav1.ConditionTrue, ObservedGeneration: 1},
			healthy: metav1.Condition{Type: workv1alpha1.ConditionHealthy, Status: metav1.ConditionFalse, ObservedGeneration: 1}}
		for i, a := range applied {
			s.items = append(s.items, workv1alpha1.AggregatedStatusItem{ClusterName: string(rune('a' + i)), Applied: a})
			if !a {
				s.applied.Status = metav1.ConditionFalse
			}
		}
		return s
	}
	fresh := &workv1alpha1.ResourceBinding{}
	key := types.NamespacedName{Namespace: "shop", Name: "web-deployment"}
	// healthyAt is a binding whose status was applied and healthy at its generation 1 (at generation: after a
	// change).
	healthyAt := func(generation int64, evicting bool) *workv1alpha1.ResourceBinding {
		b := &workv1alpha1.ResourceBinding{}
		b.Status.Conditions = []metav1.Condition{{Type: workv1alpha1.ConditionHealthy, Status: metav1.ConditionTrue, ObservedGeneration: generation},
			{Type: workv1alpha1.ConditionFullyApplied, Status: metav1.ConditionTrue, ObservedGeneration: generation}}
		if evicting {
			b.Spec.GracefulEvictionTasks = []workv1alpha1.GracefulEvictionTask{{FromCluster: "c"}}
		}
		return b
	}
	stale := func(change func(*aggregation)) aggregation {
		s := sum(true, true)
		s.stale = true
		if change != nil {
			change(&s)
		}
		return s
	}
	for _, tt := range []struct {
		name  string
		b     *workv1alpha1.ResourceBinding
		works []workv1alpha1.Work
		sum   aggregation
		held  bool
	}{
		{"applied in a, about to be in b", fresh, []workv1alpha1.Work{work("a", true, "Applied"), work("b", false, workv1alpha1.ManifestReasonApplying)}, sum(true, false), true},
		{"applied in a, no Work in b yet", fresh, []workv1alpha1.Work{work("a", true, "Applied")}, sum(true, false), true},
		{"applied in both", fresh, []workv1alpha1.Work{work("a", true, "Applied"), work("b", true, "Applied")}, sum(true, true), false},
		{"failed in b", fresh, []workv1alpha1.Work{work("a", true, "Applied"), work("b", false, "ApplyFailed")}, sum(true, false), false},
		{"applied nowhere", fresh, []workv1alpha1.Work{work("a", false, workv1alpha1.ManifestReasonApplying)}, sum(false, false), false},
		{"applied everywhere before, at this generation", func() *workv1alpha1.ResourceBinding {
			b := &workv1alpha1.ResourceBinding{}
			b.Status.Conditions = []metav1.Condition{{Type: workv1alpha1.ConditionFullyApplied, Status: metav1.ConditionTrue, ObservedGeneration: 1}}
			return b
		}(), []workv1alpha1.Work{work("a", true, "Applied")}, sum(true, false), false},
		{"healthy before, Works changed since", healthyAt(1, false), nil, stale(nil), true},
		{"healthy before, lost for another reason", healthyAt(1, false), nil, sum(true, true), false},
		{"healthy before an earlier change of the binding", healthyAt(0, false), nil, stale(nil), false},
		{"not healthy before", fresh, nil, stale(nil), false},
		{"healthy before, an eviction under way", healthyAt(1, true), nil, stale(nil), false},
		{"healthy before, FullyApplied lost too", healthyAt(1, false), nil, stale(func(s *aggregation) { s.applied.Status = metav1.ConditionFalse }), false},
		{"healthy before, a customization failed", healthyAt(1, false), nil, stale(func(s *aggregation) {
			s.interpreted = &metav1.Condition{Type: workv1alpha1.ConditionInterpreted, Status: metav1.ConditionFalse}
		}), false},
	} {
		r := &StatusController[*workv1alpha1.ResourceBinding]{}
		wait := r.holdTransient(key, tt.b, tt.works, tt.sum, now)
		if tt.held != (wait == transientHold) || !tt.held && wait != 0 {
			t.Errorf("%s: waits %s, held %t", tt.name, wait, tt.held)
			continue
		}
		if !tt.held {
			continue
		}
		if wait := r.holdTransient(key, tt.b, tt.works, tt.sum, now.Add(time.Second)); wait != transientHold-time.Second {
			t.Errorf("%s: a second later waits %s, want %s", tt.name, wait, transientHold-time.Second)
		}
		if wait := r.holdTransient(key, tt.b, tt.works, tt.sum, now.Add(transientHold)); wait != 0 {
			t.Errorf("%s: after the hold waits %s, want 0", tt.name, wait)
		}
	}
}

// TestRenderedWorksReadAGenerationOnce: a Work's manifest is read once per generation (its template
// generation and replicas); a failed read is read again; a pass that no longer lists a Work, and a changed
// customization, forget it.
func TestRenderedWorksReadAGenerationOnce(t *testing.T) {
	binding := types.NamespacedName{Namespace: "default", Name: "web-deployment"}
	work := func(uid types.UID, generation int64, replicas int) workv1alpha1.Work {
		raw := fmt.Appendf(nil, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{%q:"%d"}},"spec":{"replicas":%d}}`,
			workv1alpha1.AnnotationTemplateGeneration, 10+generation, replicas)
		return workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{UID: uid, Generation: generation},
			Spec: workv1alpha1.WorkSpec{Workload: workv1alpha1.WorkloadTemplate{Manifests: []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}}}}
	}
	reads, fail := 0, false
	read := func(m *unstructured.Unstructured) (int32, bool, error) {
		reads++
		if fail {
			return 0, false, fmt.Errorf("the customization failed")
		}
		n, _, ok := interpreter.Replicas(m)
		return n, ok, nil
	}
	var c renderedWorks
	a, b := work("a", 1, 2), work("b", 1, 3)
	for range 3 {
		if m := c.of(binding, &a, read); m != (rendered{templateGeneration: 11, replicas: 2, hasReplicas: true}) {
			t.Fatalf("read %+v; want template generation 11 and 2 replicas", m)
		}
	}
	if reads != 1 {
		t.Fatalf("one generation read %d times", reads)
	}
	a = work("a", 2, 4)
	if m := c.of(binding, &a, read); m.replicas != 4 || m.templateGeneration != 12 || reads != 2 {
		t.Fatalf("a new generation gave %+v after %d reads; want 4 replicas of template generation 12 after 2", m, reads)
	}
	fail = true
	for range 2 {
		if m := c.of(binding, &b, read); m.replicas != 0 || !m.hasReplicas {
			t.Fatalf("a failed read gave %+v; want 0 replicas, which no placement of this binding gives", m)
		}
	}
	if reads != 4 {
		t.Fatalf("a failed read was remembered: %d reads, want 4", reads)
	}
	fail = false
	c.of(binding, &b, read)
	c.keep(binding, []workv1alpha1.Work{b})
	c.of(binding, &b, read)
	c.of(binding, &a, read)
	if reads != 6 {
		t.Fatalf("%d reads; want 6: the pass that listed only b forgot a", reads)
	}
	c.forgetAll()
	c.of(binding, &b, read)
	if reads != 7 {
		t.Fatalf("%d reads; want 7: a changed customization forgets every count", reads)
	}

	// A binding without replicas reads none; when it comes to ask for them (scaled up from 0), they are read.
	zero := work("z", 1, 0)
	if m := c.of(binding, &zero, nil); m.hasReplicas || m.templateGeneration != 11 || reads != 7 {
		t.Fatalf("read %+v with %d reads; want no replicas read and template generation 11", m, reads)
	}
	if m := c.of(binding, &zero, read); !m.hasReplicas || m.replicas != 0 || reads != 8 {
		t.Fatalf("read %+v with %d reads; want the 0 replicas read", m, reads)
	}
}
