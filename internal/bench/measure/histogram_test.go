package measure

import (
	"math"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/utils/ptr"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6*math.Max(1, math.Abs(b)) }

func TestHistogramReset(t *testing.T) {
	before := histogram{count: 100, sum: 50, bounds: []float64{1}, cumulative: []float64{100}}
	after := histogram{count: 3, sum: 6, bounds: []float64{1}, cumulative: []float64{0}}
	if d := after.minus(before); d.count != 3 || d.mean() != 2 {
		t.Errorf("after a reset: %+v, want the 3 observations since", d)
	}
	if q := (histogram{}).quantile(0.99); q != 0 {
		t.Errorf("empty histogram p99 = %v", q)
	}
	// Beyond the last finite bound the buckets say no more than that bound.
	inf := histogram{count: 10, sum: 500, bounds: []float64{1, 10}, cumulative: []float64{0, 5}}
	if q := inf.quantile(0.99); q != 10 {
		t.Errorf("p99 in the +Inf bucket = %v, want 10", q)
	}
}

func TestNativeHistogram(t *testing.T) {
	// Schema 0: bucket i holds (2^(i-1), 2^i]. Spans: indexes 0-1, then a gap of one, then 3; counts 10, 5, 5
	// as deltas.
	h := histogramOf(&dto.Histogram{
		SampleCount: ptr.To[uint64](20), SampleSum: ptr.To(40.0), Schema: ptr.To[int32](0), ZeroThreshold: ptr.To(1e-9),
		PositiveSpan:  []*dto.BucketSpan{{Offset: ptr.To[int32](0), Length: ptr.To[uint32](2)}, {Offset: ptr.To[int32](1), Length: ptr.To[uint32](1)}},
		PositiveDelta: []int64{10, -5, 0},
	})
	if want := map[int]float64{0: 10, 1: 5, 3: 5}; !mapsNear(h.buckets, want) {
		t.Fatalf("buckets = %v, want %v", h.buckets, want)
	}
	// Rank 18 is the 3rd of 5 in (4, 8]: 4 × 2^(3/5), interpolated exponentially.
	if q := h.quantile(0.9); !near(q, 4*math.Pow(2, 0.6)) {
		t.Errorf("p90 = %v, want %v", q, 4*math.Pow(2, 0.6))
	}
	before := histogramOf(&dto.Histogram{
		SampleCount: ptr.To[uint64](4), SampleSum: ptr.To(2.0), Schema: ptr.To[int32](0), ZeroThreshold: ptr.To(1e-9),
		PositiveSpan: []*dto.BucketSpan{{Offset: ptr.To[int32](0), Length: ptr.To[uint32](1)}}, PositiveDelta: []int64{4},
	})
	if d := h.minus(before); d.count != 16 || !mapsNear(d.buckets, map[int]float64{0: 6, 1: 5, 3: 5}) {
		t.Errorf("minus = %+v", d)
	}
	// Before, the histogram had schema 1 (buckets of √2): 4 observations in (1/√2, 1] (index 0) and 2 in
	// (√2, 2] (index 2). Since, it halved its resolution to schema 0 and counted 14 more: what it holds in
	// (1/2, 1] and (1, 2] less what those held before, not everything since it started.
	finer := histogramOf(&dto.Histogram{
		SampleCount: ptr.To[uint64](6), SampleSum: ptr.To(6.0), Schema: ptr.To[int32](1), ZeroThreshold: ptr.To(1e-9),
		PositiveSpan: []*dto.BucketSpan{{Offset: ptr.To[int32](0), Length: ptr.To[uint32](3)}}, PositiveDelta: []int64{4, -4, 2},
	})
	if d := h.minus(finer); d.count != 14 || !near(d.sum, 34) || !mapsNear(d.buckets, map[int]float64{0: 6, 1: 3, 3: 5}) {
		t.Errorf("minus across a schema change = count %v, sum %v, buckets %v; want 14, 34, map[0:6 1:3 3:5]", d.count, d.sum, d.buckets)
	}
}

func mapsNear(a, b map[int]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range b {
		if !near(a[k], v) {
			return false
		}
	}
	return true
}
