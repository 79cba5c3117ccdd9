package bench

import (
	"errors"
	"testing"
)

func TestCompareUserCreates(t *testing.T) {
	burst := ClientTimes{Requests: 100, Seconds: 3, Each: map[string]float64{"p50": 0.06}}
	idle := ClientTimes{Requests: 100, Seconds: 2, Each: map[string]float64{"p50": 0.02}}
	for _, tc := range []struct {
		name       string
		idle       ClientTimes
		sequential bool
		want       float64
	}{
		{"all at once: the spans", idle, false, 1.5},
		{"one at a time: the medians", idle, true, 3},
		{"no reference", ClientTimes{}, false, 0},
		{"no reference, one at a time", ClientTimes{}, true, 0},
	} {
		if got := compare(burst, tc.idle, tc.sequential); got != tc.want {
			t.Errorf("%s: ratio %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestClientTimerCountsFailures: a refused request is timed too, and its error reaches the caller.
func TestClientTimerCountsFailures(t *testing.T) {
	timer := &clientTimer{}
	if got := timer.times(); got.Requests != 0 || got.Each != nil {
		t.Fatalf("nothing timed yet: %+v", got)
	}
	refused := errors.New("refused")
	if err := timer.do(func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := timer.do(func() error { return refused }); !errors.Is(err, refused) {
		t.Fatalf("error = %v, want the request's", err)
	}
	if got := timer.times(); got.Requests != 2 || got.Seconds < got.Each["max"] {
		t.Fatalf("times = %+v: want two requests, the span at least the longest", got)
	}
}
