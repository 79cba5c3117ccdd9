package bench

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

func TestWaveDelays(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	mst := 2 * time.Second
	// member2 is updated first (order comes from the update times, not the names), healthy 300 ms later;
	// member1 follows 2.25 s after that (250 ms late), member3 1.9 s after member1 was healthy (100 ms early).
	clusters := map[string]clusterWave{
		"member2": {updated: at(0), healthy: at(300)},
		"member1": {updated: at(2550), healthy: at(2600)},
		"member3": {updated: at(4500)},
	}
	got, err := waveDelays(clusters, 3, mst)
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{250 * time.Millisecond, -100 * time.Millisecond}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("waveDelays = %v, want %v", got, want)
	}

	if _, err := waveDelays(clusters, 4, mst); err == nil || !strings.Contains(err.Error(), "saw 3 of 4 clusters") {
		t.Fatalf("a cluster never updated: err = %v", err)
	}
	clusters["member1"] = clusterWave{updated: at(2550)}
	if _, err := waveDelays(clusters, 3, mst); err == nil || !strings.Contains(err.Error(), "member3 was updated before member1 was seen healthy") {
		t.Fatalf("a wave after a cluster never healthy: err = %v", err)
	}
	if got, err := waveDelays(map[string]clusterWave{"member1": {updated: at(0)}}, 1, mst); err != nil || len(got) != 0 {
		t.Fatalf("one cluster: %v, %v; want no delay", got, err)
	}
}

func TestWaveLogObserve(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Generation: 2, Annotations: map[string]string{workv1alpha1.AnnotationRevision: "abc"}}}
	l := newWaveLog()
	l.observe("b", "member1", w, t0)
	// Healthy on the previous generation is not healthy on this revision.
	w.Status.ManifestStatuses = []workv1alpha1.ManifestStatus{{Applied: true, Health: workv1alpha1.ResourceHealthy,
		Conditions: []metav1.Condition{{Type: workv1alpha1.ManifestConditionObserved, Status: metav1.ConditionTrue}}}}
	meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: workv1alpha1.WorkConditionApplied, Status: metav1.ConditionTrue, ObservedGeneration: 1})
	l.observe("b", "member1", w, t0.Add(time.Second))
	w.Status.Conditions[0].ObservedGeneration = 2
	l.observe("b", "member1", w, t0.Add(2*time.Second))
	l.observe("b", "member1", w, t0.Add(3*time.Second))
	got := l.clusters(revisionKey{"b", "abc"})["member1"]
	if !got.updated.Equal(t0) || !got.healthy.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("member1 = updated %v, healthy %v; want the first sighting and the first healthy one", got.updated, got.healthy)
	}
	w.Annotations = nil
	l.observe("c", "member1", w, t0)
	if len(l.seen) != 1 {
		t.Fatalf("a Work without a revision was recorded: %v", l.seen)
	}
}

func TestRolloutOptionsValidate(t *testing.T) {
	valid := func() RolloutOptions {
		return RolloutOptions{Members: 3, Templates: 5, Changes: 3, MinSuccessTime: 2 * time.Second, Timeout: time.Minute}
	}
	tests := []struct {
		name   string
		change func(o *RolloutOptions)
		want   string
	}{
		{"valid", func(*RolloutOptions) {}, ""},
		{"one member", func(o *RolloutOptions) { o.Members = 1 }, "--members 1"},
		{"too many members", func(o *RolloutOptions) { o.Members = 101 }, "--members 101"},
		{"no templates", func(o *RolloutOptions) { o.Templates = 0 }, "--templates 0"},
		{"no changes", func(o *RolloutOptions) { o.Changes = 0 }, "--changes 0"},
		{"no minSuccessTime", func(o *RolloutOptions) { o.MinSuccessTime = 0 }, "--min-success-time 0s"},
		{"no timeout", func(o *RolloutOptions) { o.Timeout = 0 }, "--timeout 0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := valid()
			tt.change(&o)
			err := o.Validate()
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
}
