package measure

import (
	"sync"
	"time"
)

// ClientTimes are requests timed by the client that sent them.
type ClientTimes struct {
	Requests int `json:"requests"`
	// Seconds from the first request sent to the last response received.
	Seconds float64 `json:"seconds"`
	// Each is the seconds of one request, from sending it to its response: p50, p90, p99 and max.
	Each map[string]float64 `json:"each"`
}

// ClientTimer times requests sent from any number of goroutines.
type ClientTimer struct {
	mu          sync.Mutex
	first, last time.Time
	each        []time.Duration
}

// Do sends one request and times it.
func (c *ClientTimer) Do(request func() error) error {
	start := time.Now()
	err := request()
	end := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.first.IsZero() || start.Before(c.first) {
		c.first = start
	}
	if end.After(c.last) {
		c.last = end
	}
	c.each = append(c.each, end.Sub(start))
	return err
}

// Times are the requests timed so far.
func (c *ClientTimer) Times() ClientTimes {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.each) == 0 {
		return ClientTimes{}
	}
	return ClientTimes{Requests: len(c.each), Seconds: c.last.Sub(c.first).Seconds(), Each: Percentiles(c.each)}
}
