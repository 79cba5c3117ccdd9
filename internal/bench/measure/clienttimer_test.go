package measure

import (
	"errors"
	"testing"
)

// TestClientTimerCountsFailures: a refused request is timed too, and its error reaches the caller.
func TestClientTimerCountsFailures(t *testing.T) {
	timer := &ClientTimer{}
	if got := timer.Times(); got.Requests != 0 || got.Each != nil {
		t.Fatalf("nothing timed yet: %+v", got)
	}
	refused := errors.New("refused")
	if err := timer.Do(func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := timer.Do(func() error { return refused }); !errors.Is(err, refused) {
		t.Fatalf("error = %v, want the request's", err)
	}
	if got := timer.Times(); got.Requests != 2 || got.Seconds < got.Each["max"] {
		t.Fatalf("times = %+v: want two requests, the span at least the longest", got)
	}
}
