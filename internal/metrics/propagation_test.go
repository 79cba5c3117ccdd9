package metrics

import (
	"slices"
	"testing"
	"time"
)

func TestPropagationObservesOnlyWhatItSawHappen(t *testing.T) {
	type step struct {
		op      string // seen, written, applied, healthy
		gen     int64
		cluster string
		at      int // seconds since the start
	}
	tests := []struct {
		name                     string
		steps                    []step
		wantApplied, wantHealthy []float64
	}{
		{"seen, written, applied, healthy", []step{{"seen", 1, "", 0}, {"written", 1, "m1", 1}, {"applied", 1, "m1", 2}, {"healthy", 1, "m1", 5}},
			[]float64{2}, []float64{5}},
		{"each stage observed once per cluster", []step{{"seen", 1, "", 0}, {"written", 1, "m1", 0}, {"written", 1, "m2", 0},
			{"applied", 1, "m1", 1}, {"applied", 1, "m1", 2}, {"applied", 1, "m2", 3}}, []float64{1, 3}, nil},
		{"a hub that starts finds the Work applied already: nothing", []step{{"seen", 1, "", 0}, {"applied", 1, "m1", 1}, {"healthy", 1, "m1", 1}}, nil, nil},
		{"a Work written for another generation: nothing", []step{{"seen", 2, "", 0}, {"written", 1, "m1", 1}, {"applied", 1, "m1", 2}, {"applied", 2, "m1", 2}}, nil, nil},
		{"a newer generation replaces the older", []step{{"seen", 1, "", 0}, {"written", 1, "m1", 1}, {"seen", 2, "", 3}, {"applied", 1, "m1", 4},
			{"written", 2, "m1", 4}, {"applied", 2, "m1", 5}}, []float64{2}, nil},
		{"an older generation seen late changes nothing", []step{{"seen", 2, "", 0}, {"seen", 1, "", 1}, {"written", 2, "m1", 1}, {"applied", 2, "m1", 2}},
			[]float64{2}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Unix(1000, 0)
			now := start
			var applied, healthy []float64
			tr := newTracker(func(v float64) { applied = append(applied, v) }, func(v float64) { healthy = append(healthy, v) }, func() time.Time { return now })
			for _, s := range tt.steps {
				now = start.Add(time.Duration(s.at) * time.Second)
				switch s.op {
				case "seen":
					tr.Seen("uid", s.gen)
				case "written":
					tr.Written("uid", s.gen, s.cluster)
				case "applied":
					tr.Reached("uid", s.gen, s.cluster, StageApplied)
				case "healthy":
					tr.Reached("uid", s.gen, s.cluster, StageHealthy)
				}
			}
			if !slices.Equal(applied, tt.wantApplied) || !slices.Equal(healthy, tt.wantHealthy) {
				t.Fatalf("observed applied %v healthy %v, want %v and %v", applied, healthy, tt.wantApplied, tt.wantHealthy)
			}
		})
	}
}
