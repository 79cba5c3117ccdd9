package measure

import (
	"testing"
	"time"
)

func TestPercentiles(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- { // 1..100 ms, unsorted
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	got := Percentiles(ds)
	want := map[string]float64{"p50": 0.050, "p90": 0.090, "p99": 0.099, "max": 0.100}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if one := Percentiles([]time.Duration{time.Second}); one["p50"] != 1 || one["p99"] != 1 {
		t.Errorf("single sample: %v", one)
	}
	if none := Percentiles(nil); none != nil {
		t.Errorf("no sample: %v", none)
	}
}
