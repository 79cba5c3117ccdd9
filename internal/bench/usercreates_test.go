package bench

import (
	"testing"

	"github.com/flotilla-io/flotilla/internal/bench/measure"
)

func TestCompareUserCreates(t *testing.T) {
	burst := measure.ClientTimes{Requests: 100, Seconds: 3, Each: map[string]float64{"p50": 0.06}}
	idle := measure.ClientTimes{Requests: 100, Seconds: 2, Each: map[string]float64{"p50": 0.02}}
	for _, tc := range []struct {
		name       string
		idle       measure.ClientTimes
		sequential bool
		want       float64
	}{
		{"all at once: the spans", idle, false, 1.5},
		{"one at a time: the medians", idle, true, 3},
		{"no reference", measure.ClientTimes{}, false, 0},
		{"no reference, one at a time", measure.ClientTimes{}, true, 0},
	} {
		if got := compare(burst, tc.idle, tc.sequential); got != tc.want {
			t.Errorf("%s: ratio %v, want %v", tc.name, got, tc.want)
		}
	}
}
