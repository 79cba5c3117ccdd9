package bench

import (
	"fmt"
	"slices"
	"sync"
	"time"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/rollout"
)

// A progressive rollout's waves, as the benchmark sees them on a watch of the Works: for each revision of
// each binding, when each cluster's Work first carried it (the hub updated it) and when that Work first
// reported it healthy.

// revisionKey is one revision of one binding.
type revisionKey struct{ binding, hash string }

// clusterWave is when one cluster's Work was updated to a revision and first reported it healthy (zero when
// not seen).
type clusterWave struct {
	updated, healthy time.Time
}

// waveLog records, from Work events, the times of every cluster's wave of every revision. It is safe for
// concurrent use.
type waveLog struct {
	mu   sync.Mutex
	seen map[revisionKey]map[string]*clusterWave
}

func newWaveLog() *waveLog { return &waveLog{seen: map[revisionKey]map[string]*clusterWave{}} }

// observe records a Work of binding in cluster as seen now: the first time it carries its revision, and the
// first time it is healthy on it.
func (l *waveLog) observe(binding, cluster string, w *workv1alpha1.Work, now time.Time) {
	hash := w.Annotations[workv1alpha1.AnnotationRevision]
	if hash == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	key := revisionKey{binding, hash}
	if l.seen[key] == nil {
		l.seen[key] = map[string]*clusterWave{}
	}
	c := l.seen[key][cluster]
	if c == nil {
		c = &clusterWave{updated: now}
		l.seen[key][cluster] = c
	}
	if c.healthy.IsZero() && rollout.Healthy(w) {
		c.healthy = now
	}
}

// clusters returns a copy of what was seen of one revision, by cluster.
func (l *waveLog) clusters(key revisionKey) map[string]clusterWave {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]clusterWave{}
	for name, c := range l.seen[key] {
		out[name] = *c
	}
	return out
}

// waveDelays returns the hub's delay before each wave of one revision after the first, one cluster a wave
// (maxConcurrency 1): the time the wave's cluster's Work was updated to the revision, less the time the
// previous wave's cluster's Work first reported it healthy plus minSuccessTime. Zero is a hub that starts
// the next wave the moment the previous one succeeded; a negative delay is one started early. want is the
// number of clusters the revision reached: fewer seen, or a previous cluster never seen healthy, is an error.
func waveDelays(clusters map[string]clusterWave, want int, minSuccessTime time.Duration) ([]time.Duration, error) {
	if len(clusters) != want {
		return nil, fmt.Errorf("saw %d of %d clusters updated", len(clusters), want)
	}
	names := make([]string, 0, len(clusters))
	for name := range clusters {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int { return clusters[a].updated.Compare(clusters[b].updated) })
	var delays []time.Duration
	for i := 1; i < len(names); i++ {
		prev := clusters[names[i-1]]
		if prev.healthy.IsZero() {
			return nil, fmt.Errorf("%s was updated before %s was seen healthy", names[i], names[i-1])
		}
		delays = append(delays, clusters[names[i]].updated.Sub(prev.healthy.Add(minSuccessTime)))
	}
	return delays, nil
}
