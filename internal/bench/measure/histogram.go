package measure

import (
	"maps"
	"math"
	"slices"

	dto "github.com/prometheus/client_model/go"
)

// histogram is one series of a Prometheus histogram of durations: its classic buckets and, when the series
// has them, its native buckets. The controllers' workqueue histograms have classic buckets a factor of ten
// apart (1 ms, 10 ms, 100 ms, 1 s, 10 s, ...), too coarse for a p99, and native buckets about 10% wide,
// which the hub serves in the protocol-buffer format only.
type histogram struct {
	count, sum float64
	// bounds are the classic buckets' upper bounds, increasing, +Inf left out; cumulative[i] counts the
	// observations at most bounds[i].
	bounds, cumulative []float64
	// native says the series has native buckets: buckets[i] counts the observations in
	// (base^(i-1), base^i], base = 2^(2^-schema); zeroCount those at most zeroThreshold.
	native                   bool
	schema                   int32
	zeroThreshold, zeroCount float64
	buckets                  map[int]float64
}

// histogramOf reads a histogram series. Durations are never negative: negative native buckets are ignored.
func histogramOf(h *dto.Histogram) histogram {
	r := histogram{count: float64(h.GetSampleCount()), sum: h.GetSampleSum()}
	if h.GetSampleCountFloat() > 0 {
		r.count = h.GetSampleCountFloat()
	}
	for _, b := range h.GetBucket() {
		if math.IsInf(b.GetUpperBound(), 1) {
			continue
		}
		n := float64(b.GetCumulativeCount())
		if b.GetCumulativeCountFloat() > 0 {
			n = b.GetCumulativeCountFloat()
		}
		r.bounds = append(r.bounds, b.GetUpperBound())
		r.cumulative = append(r.cumulative, n)
	}
	// A native histogram has a zero bucket or at least one span (a no-op one when it is empty).
	if h.ZeroThreshold == nil && len(h.GetPositiveSpan()) == 0 {
		return r
	}
	r.native, r.schema, r.zeroThreshold = true, h.GetSchema(), h.GetZeroThreshold()
	r.zeroCount = float64(h.GetZeroCount())
	if h.GetZeroCountFloat() > 0 {
		r.zeroCount = h.GetZeroCountFloat()
	}
	r.buckets = map[int]float64{}
	// Spans give the bucket indexes: the first span's offset is an index, the others' a gap after the
	// previous span. Counts are deltas from the previous bucket (integer histograms) or absolute (float ones).
	index, bucket, count := 0, 0, 0.0
	for i, span := range h.GetPositiveSpan() {
		if i == 0 {
			index = int(span.GetOffset())
		} else {
			index += int(span.GetOffset())
		}
		for range span.GetLength() {
			switch {
			case bucket < len(h.GetPositiveDelta()):
				count += float64(h.GetPositiveDelta()[bucket])
			case bucket < len(h.GetPositiveCount()):
				count = h.GetPositiveCount()[bucket]
			}
			if count > 0 {
				r.buckets[index] = count
			}
			index++
			bucket++
		}
	}
	return r
}

// minus returns the observations made since before was read. A histogram that was reset in between (its
// count went down) is returned whole: its observations since the reset. A native histogram whose buckets
// grew too many halves its resolution (a lower schema) and keeps its counts: before is brought to the same
// schema first.
func (h histogram) minus(before histogram) histogram {
	if h.count < before.count {
		return h
	}
	d := histogram{count: h.count - before.count, sum: h.sum - before.sum, bounds: h.bounds,
		native: h.native, schema: h.schema, zeroThreshold: h.zeroThreshold}
	if slices.Equal(h.bounds, before.bounds) {
		for i, n := range h.cumulative {
			d.cumulative = append(d.cumulative, n-before.cumulative[i])
		}
	} else {
		// Buckets that changed cannot be subtracted; an empty histogram before has none.
		d.bounds, d.cumulative = h.bounds, h.cumulative
	}
	if h.native {
		b := before.atSchema(h.schema)
		d.zeroCount = h.zeroCount - b.zeroCount
		d.buckets = map[int]float64{}
		for i, n := range h.buckets {
			if n -= b.buckets[i]; n > 0 {
				d.buckets[i] = n
			}
		}
	}
	return d
}

// atSchema returns the native buckets merged into those of a lower schema (each of its buckets holds
// 2^(h.schema-schema) of h's), as a native histogram does when it reduces its resolution.
func (h histogram) atSchema(schema int32) histogram {
	if !h.native || schema >= h.schema {
		return h
	}
	r := h
	r.schema, r.buckets = schema, map[int]float64{}
	for i, n := range h.buckets {
		r.buckets[((i-1)>>(h.schema-schema))+1] += n
	}
	return r
}

// plus returns the observations of h and o together (two series of one quantity, such as one priority
// level's flow schemas). Classic buckets add when their bounds are the same; native ones when their schemas
// are; otherwise o's buckets are dropped, its count and sum kept.
func (h histogram) plus(o histogram) histogram {
	if h.count == 0 && h.bounds == nil && !h.native {
		return o
	}
	r := h
	r.count, r.sum = h.count+o.count, h.sum+o.sum
	if slices.Equal(h.bounds, o.bounds) {
		r.cumulative = make([]float64, len(h.cumulative))
		for i := range h.cumulative {
			r.cumulative[i] = h.cumulative[i] + o.cumulative[i]
		}
	}
	if h.native && o.native && h.schema == o.schema {
		r.zeroCount = h.zeroCount + o.zeroCount
		r.buckets = maps.Clone(h.buckets)
		for i, n := range o.buckets {
			r.buckets[i] += n
		}
	}
	return r
}

// mean is the mean observation, exact from the sum; 0 without observations.
func (h histogram) mean() float64 {
	if h.count == 0 {
		return 0
	}
	return h.sum / h.count
}

// quantile estimates the q-quantile (0 < q ≤ 1) from the buckets, as Prometheus's histogram_quantile does:
// it finds the bucket that holds the observation of rank q × count and interpolates within it, linearly
// in classic buckets, exponentially in native ones. Native buckets are used when there are any.
func (h histogram) quantile(q float64) float64 {
	if h.count == 0 {
		return 0
	}
	rank := q * h.count
	if h.native {
		return h.nativeQuantile(rank)
	}
	lower, below := 0.0, 0.0
	for i, bound := range h.bounds {
		if n := h.cumulative[i]; n >= rank {
			if n == below {
				return bound
			}
			return lower + (bound-lower)*(rank-below)/(n-below)
		}
		lower, below = bound, h.cumulative[i]
	}
	// In the +Inf bucket: the largest finite bound is the best the buckets can say.
	return lower
}

func (h histogram) nativeQuantile(rank float64) float64 {
	below := h.zeroCount
	if rank <= below {
		return h.zeroThreshold
	}
	base := math.Pow(2, math.Pow(2, -float64(h.schema)))
	upper := 0.0
	for _, i := range slices.Sorted(maps.Keys(h.buckets)) {
		n := h.buckets[i]
		upper = math.Pow(base, float64(i))
		if below+n >= rank {
			lower := math.Max(upper/base, h.zeroThreshold)
			if lower <= 0 {
				return upper * (rank - below) / n
			}
			return lower * math.Pow(upper/lower, (rank-below)/n)
		}
		below += n
	}
	return upper
}
