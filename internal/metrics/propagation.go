package metrics

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Propagation measures flotilla_propagation_duration_seconds in three steps, each taken by the controller
// that knows it: the detector sees a template's generation (Seen), the binding controller writes that
// generation into a cluster's Work (Written), and the status controller finds the Work applied or healthy
// (Reached). A propagation is observed only when all three happened in this process, in that order, so a hub
// that starts (or becomes leader) and finds templates long propagated observes nothing for them instead of a
// flood of near-zero latencies.
var Propagation = newTracker(PropagationSeconds.WithLabelValues(StageApplied).Observe,
	PropagationSeconds.WithLabelValues(StageHealthy).Observe, time.Now)

// maxTracked bounds the templates followed at once; past it the oldest generations are dropped (their
// propagations go unobserved), so a burst of templates that never reach a member cannot grow the hub.
const maxTracked = 20000

type tracker struct {
	mu      sync.Mutex
	entries map[types.UID]*generation
	order   []types.UID // oldest first, for eviction past maxTracked
	observe map[string]func(float64)
	now     func() time.Time
}

// generation is the propagation of one template generation.
type generation struct {
	number int64
	seen   time.Time
	// pending holds the clusters whose Work carries this generation, by stage not yet reached.
	pending map[string]map[string]bool
}

func newTracker(applied, healthy func(float64), now func() time.Time) *tracker {
	return &tracker{entries: map[types.UID]*generation{}, now: now,
		observe: map[string]func(float64){StageApplied: applied, StageHealthy: healthy}}
}

// Seen records when the hub first saw generation gen of template uid; a newer generation replaces an older
// one, whose propagations are then no longer observed.
func (t *tracker) Seen(uid types.UID, gen int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.entries[uid]; ok && e.number >= gen {
		return
	} else if !ok {
		t.order = append(t.order, uid)
	}
	t.entries[uid] = &generation{number: gen, seen: t.now(), pending: map[string]map[string]bool{}}
	for len(t.order) > maxTracked {
		delete(t.entries, t.order[0])
		t.order = t.order[1:]
	}
}

// Written records that cluster's Work now carries generation gen of template uid: from here on, the cluster
// reaching each stage for it is observed once.
func (t *tracker) Written(uid types.UID, gen int64, cluster string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.entries[uid]; ok && e.number == gen {
		e.pending[cluster] = map[string]bool{StageApplied: true, StageHealthy: true}
	}
}

// Reached records that cluster reached stage for generation gen of template uid, and observes the time since
// Seen when it was pending.
func (t *tracker) Reached(uid types.UID, gen int64, cluster, stage string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.entries[uid]
	if !ok || e.number != gen || !e.pending[cluster][stage] {
		return
	}
	delete(e.pending[cluster], stage)
	t.observe[stage](t.now().Sub(e.seen).Seconds())
}
