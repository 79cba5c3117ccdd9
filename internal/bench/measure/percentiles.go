package measure

import (
	"slices"
	"time"
)

// Percentiles returns p50, p90, p99 and max of ds in seconds (nearest rank), or nothing when there is no
// sample: a stage no object reached must not cost the figures measured before it.
func Percentiles(ds []time.Duration) map[string]float64 {
	if len(ds) == 0 {
		return nil
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(p float64) float64 {
		i := int(p*float64(len(s))+0.999999) - 1
		return s[max(0, min(i, len(s)-1))].Seconds()
	}
	return map[string]float64{"p50": at(0.50), "p90": at(0.90), "p99": at(0.99), "max": s[len(s)-1].Seconds()}
}
