package measure

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Recorder keeps, for each object, when its wave began, and for each stage the first time the stage was
// seen for an object in a cluster. Stages of the object as a whole use the cluster "". It is safe for
// concurrent use: watches mark stages while the benchmark waits for them.
type Recorder struct {
	mu    sync.Mutex
	begun map[string]time.Time
	seen  map[stageKey]time.Time
	// reached counts the entries of seen by stage, for waits that poll.
	reached map[string]int
}

type stageKey struct{ stage, object, cluster string }

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder {
	return &Recorder{begun: map[string]time.Time{}, seen: map[stageKey]time.Time{}, reached: map[string]int{}}
}

// Reset forgets everything, for the next wave.
func (r *Recorder) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.begun)
	clear(r.seen)
	clear(r.reached)
}

// Begin marks the start of object's wave: now.
func (r *Recorder) Begin(object string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.begun[object] = time.Now()
}

// Mark records that stage was reached for object in cluster, the first time only. Objects whose wave has
// not begun are ignored.
func (r *Recorder) Mark(stage, object, cluster string) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	key := stageKey{stage, object, cluster}
	if _, begun := r.begun[object]; begun {
		if _, done := r.seen[key]; !done {
			r.seen[key] = now
			r.reached[stage]++
		}
	}
}

// Durations returns how long each object (in each cluster) took to reach stage.
func (r *Recorder) Durations(stage string) []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ds []time.Duration
	for k, at := range r.seen {
		if k.stage == stage {
			ds = append(ds, at.Sub(r.begun[k.object]))
		}
	}
	return ds
}

// count is how many objects (in each cluster) reached stage.
func (r *Recorder) count(stage string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reached[stage]
}

// Latest returns, for each object, how long it took to reach stage in its last cluster.
func (r *Recorder) Latest(stage string) []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	last := map[string]time.Duration{}
	for k, at := range r.seen {
		if d := at.Sub(r.begun[k.object]); k.stage == stage && d > last[k.object] {
			last[k.object] = d
		}
	}
	ds := make([]time.Duration, 0, len(last))
	for _, d := range last {
		ds = append(ds, d)
	}
	return ds
}

// Rate is how many times per second stage was reached, from the first object's begin to the last time
// the stage was reached.
func (r *Recorder) Rate(stage string) float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var first, last time.Time
	for _, at := range r.begun {
		if first.IsZero() || at.Before(first) {
			first = at
		}
	}
	n := 0
	for k, at := range r.seen {
		if k.stage == stage {
			n++
			if at.After(last) {
				last = at
			}
		}
	}
	if n == 0 || !last.After(first) {
		return 0
	}
	return float64(n) / last.Sub(first).Seconds()
}

// Reached says whether stage was reached for object in every one of clusters.
func (r *Recorder) Reached(stage, object string, clusters []string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range clusters {
		if _, ok := r.seen[stageKey{stage, object, c}]; !ok {
			return false
		}
	}
	return true
}

// WaitCounts waits until every stage was reached want[stage] times, reporting progress every 10 s.
func (r *Recorder) WaitCounts(ctx context.Context, want map[string]int, timeout time.Duration, progress func(string)) error {
	deadline := time.Now().Add(timeout)
	lastReport := time.Now()
	for {
		missing := ""
		for stage, n := range want {
			if got := r.count(stage); got < n {
				missing += fmt.Sprintf(" %s %d/%d", stage, got, n)
			}
		}
		if missing == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s still waiting for:%s", timeout, missing)
		}
		if time.Since(lastReport) > 10*time.Second {
			progress("waiting for:" + missing)
			lastReport = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
