// Package headroom leaves the hub's users their share of it during Flotilla's own bursts. API Priority and
// Fairness divides the API server's seats between flows, but not the CPU each seated request then needs: on
// a hub whose cores are busy, the controllers' writes made a user's creates several times slower. A Limiter
// bounds how many writes the hub's controllers have in flight and moves that bound by how the users' writes
// fare in the same API server:
//   - a user's write that takes more than twice the fastest write of the last minute, and 10 ms more, means
//     the users wait: the bound falls to half the controllers' writes in flight (at least MinLimit), once per
//     round of answers (a slow write sent before a fall answers to the old bound);
//   - each answer to a controllers' write that the bound held back raises it by one, unless a user's write
//     was slow within the last round of the users' answers, so that the bound is out of the way (up to
//     MaxLimit) soon after the users' writes are fast again.
//
// This is TCP's congestion control (RFC 5681: half the flight on congestion, one more per answer while
// below the threshold) with the users' delay, not loss, as the signal. It needs the users' answer times,
// which only the embedded hub's API server, in the same process, can give (Observe).
package headroom

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"
)

const (
	// MinLimit and MaxLimit bound the controllers' writes in flight: one at a time is too few to keep a burst
	// moving while the hub waits on etcd; past 64 a busy hub only queues them.
	MinLimit = 2
	MaxLimit = 64
	// baselineWindow is how long the fastest write counts as the hub at rest: the baseline follows a hub
	// whose writes became slower for good (a larger etcd) within two windows.
	baselineWindow = 30 * time.Second
	// A user's write is slow when it takes more than tolerance × the baseline + slack; the slack keeps a hub
	// that answers in 2 ms from counting 5 ms as busy.
	tolerance = 2
	slack     = 10 * time.Millisecond
)

// Limiter bounds the controllers' writes in flight by the users' answer times. Create it with New.
type Limiter struct {
	// onLimit, when set, is told the bound whenever it changes (a metric).
	onLimit func(int)

	mu       sync.Mutex
	limit    int
	inFlight int
	waiting  []chan struct{}
	// fastest holds the fastest write of the current window and of the one before it, the baseline.
	fastest     [2]time.Duration
	windowStart time.Time
	// lastFall is when the bound last fell: a user's write sent before it does not lower it again.
	lastFall time.Time
	// usersWaitUntil is a round of the users' answers after their last slow one: until then the bound
	// does not grow (the controllers' answers come many times per round of the users').
	usersWaitUntil time.Time
}

// New returns a Limiter that starts at MaxLimit and tells onLimit (when not nil) of each change of its bound.
func New(onLimit func(int)) *Limiter {
	if onLimit != nil {
		onLimit(MaxLimit)
	}
	return &Limiter{limit: MaxLimit, onLimit: onLimit}
}

// Limit is the current bound on writes in flight.
func (l *Limiter) Limit() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.limit
}

// Acquire waits for a slot, first come first served, or for ctx to end; it reports whether the bound held
// the write back. A slot acquired must be returned with Release.
func (l *Limiter) Acquire(ctx context.Context) (heldBack bool, err error) {
	l.mu.Lock()
	if l.inFlight < l.limit && len(l.waiting) == 0 {
		l.inFlight++
		l.mu.Unlock()
		return false, nil
	}
	granted := make(chan struct{})
	l.waiting = append(l.waiting, granted)
	l.mu.Unlock()
	select {
	case <-granted:
		return true, nil
	case <-ctx.Done():
		l.mu.Lock()
		defer l.mu.Unlock()
		for i, w := range l.waiting {
			if w == granted {
				l.waiting = append(l.waiting[:i], l.waiting[i+1:]...)
				return true, ctx.Err()
			}
		}
		// Granted as ctx ended: hand the slot on.
		l.inFlight--
		l.grant()
		return true, ctx.Err()
	}
}

// Release returns a slot. An answered write (answered true) that had been held back raises the bound by
// one, unless the users' writes were slow within their last round; its time counts towards the baseline.
func (l *Limiter) Release(heldBack, answered bool, took time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inFlight--
	if answered {
		now := time.Now()
		l.learnBaseline(now, took)
		if heldBack && now.After(l.usersWaitUntil) {
			l.setLimit(l.limit + 1)
		}
	}
	l.grant()
}

// ObserveUser learns from a user's write sent at sent that took took: a slow one lowers the bound.
func (l *Limiter) ObserveUser(sent time.Time, took time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	baseline := l.learnBaseline(sent.Add(took), took)
	if took <= tolerance*baseline+slack {
		return
	}
	answered := sent.Add(took)
	l.usersWaitUntil = answered.Add(took)
	if sent.After(l.lastFall) {
		l.setLimit(min(l.limit, l.inFlight) / 2)
		l.lastFall = answered
	}
}

// learnBaseline counts a write that took took, answered at now, towards the baseline and returns it.
func (l *Limiter) learnBaseline(now time.Time, took time.Duration) time.Duration {
	if l.windowStart.IsZero() || now.Sub(l.windowStart) > baselineWindow {
		l.fastest[1], l.fastest[0], l.windowStart = l.fastest[0], 0, now
	}
	if l.fastest[0] == 0 || took < l.fastest[0] {
		l.fastest[0] = took
	}
	if l.fastest[1] != 0 && l.fastest[1] < l.fastest[0] {
		return l.fastest[1]
	}
	return l.fastest[0]
}

func (l *Limiter) setLimit(limit int) {
	limit = min(MaxLimit, max(MinLimit, limit))
	if limit != l.limit && l.onLimit != nil {
		l.onLimit(limit)
	}
	l.limit = limit
	l.grant()
}

// grant hands free slots to the writes waiting longest.
func (l *Limiter) grant() {
	for len(l.waiting) > 0 && l.inFlight < l.limit {
		l.inFlight++
		close(l.waiting[0])
		l.waiting = l.waiting[1:]
	}
}

// Wrap bounds the writes sent through rt (a rest.Config's WrapTransport). Reads and watches pass freely, and
// so do Lease writes: a leader or shard Lease renewed late costs the hub its controllers.
func (l *Limiter) Wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if !IsWrite(req.Method) || strings.HasPrefix(req.URL.Path, "/apis/coordination.k8s.io/") {
			return rt.RoundTrip(req)
		}
		heldBack, err := l.Acquire(req.Context())
		if err != nil {
			return nil, err
		}
		start := time.Now()
		resp, err := rt.RoundTrip(req)
		l.Release(heldBack, err == nil, time.Since(start))
		return resp, err
	})
}

// IsWrite tells the HTTP methods that change objects.
func IsWrite(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
