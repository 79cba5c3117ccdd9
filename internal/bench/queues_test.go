package bench

import (
	"bytes"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"k8s.io/utils/ptr"

	"github.com/flotilla-io/flotilla/internal/metrics"
)

// queuesBefore: the scheduler's queue has taken 10 items, each waiting under 1 ms and worked on in under
// 10 ms; the cluster-status queue 5; the binding controller none yet.
const queuesBefore = `# TYPE flotilla_workqueue_queue_duration_seconds histogram
flotilla_workqueue_queue_duration_seconds_bucket{controller="scheduler",name="scheduler",le="0.001"} 10
flotilla_workqueue_queue_duration_seconds_bucket{controller="scheduler",name="scheduler",le="0.01"} 10
flotilla_workqueue_queue_duration_seconds_bucket{controller="scheduler",name="scheduler",le="0.1"} 10
flotilla_workqueue_queue_duration_seconds_bucket{controller="scheduler",name="scheduler",le="1"} 10
flotilla_workqueue_queue_duration_seconds_bucket{controller="scheduler",name="scheduler",le="10"} 10
flotilla_workqueue_queue_duration_seconds_bucket{controller="scheduler",name="scheduler",le="+Inf"} 10
flotilla_workqueue_queue_duration_seconds_sum{controller="scheduler",name="scheduler"} 0.005
flotilla_workqueue_queue_duration_seconds_count{controller="scheduler",name="scheduler"} 10
flotilla_workqueue_queue_duration_seconds_bucket{controller="cluster-status",name="cluster-status",le="0.001"} 5
flotilla_workqueue_queue_duration_seconds_bucket{controller="cluster-status",name="cluster-status",le="+Inf"} 5
flotilla_workqueue_queue_duration_seconds_sum{controller="cluster-status",name="cluster-status"} 0.001
flotilla_workqueue_queue_duration_seconds_count{controller="cluster-status",name="cluster-status"} 5
# TYPE flotilla_workqueue_work_duration_seconds histogram
flotilla_workqueue_work_duration_seconds_bucket{controller="scheduler",name="scheduler",le="0.001"} 0
flotilla_workqueue_work_duration_seconds_bucket{controller="scheduler",name="scheduler",le="0.01"} 10
flotilla_workqueue_work_duration_seconds_bucket{controller="scheduler",name="scheduler",le="0.1"} 10
flotilla_workqueue_work_duration_seconds_bucket{controller="scheduler",name="scheduler",le="1"} 10
flotilla_workqueue_work_duration_seconds_bucket{controller="scheduler",name="scheduler",le="10"} 10
flotilla_workqueue_work_duration_seconds_bucket{controller="scheduler",name="scheduler",le="+Inf"} 10
flotilla_workqueue_work_duration_seconds_sum{controller="scheduler",name="scheduler"} 0.05
flotilla_workqueue_work_duration_seconds_count{controller="scheduler",name="scheduler"} 10
# TYPE flotilla_controller_reconcile_total counter
flotilla_controller_reconcile_total{controller="scheduler",result="success"} 10
`

// queuesAfter: the scheduler took 100 more items: 40 waited 10-100 ms, 58 waited 0.1-1 s and 2 waited 1-10 s,
// 60 s in all; each was worked on in 10-100 ms, 3 s in all; 95 succeeded and 5 failed. The binding
// controller took its first 4 items; the cluster-status queue none; the garbage collector's queue, served
// by Kubernetes' own registry, 2. The controllers' priority level ran 40 requests (2 s in all) after they
// waited 10 s in all, 30 of them under 0.1 s, and turned 2 away after a minute in its queues.
const queuesAfter = `# TYPE flotilla_workqueue_queue_duration_seconds histogram
flotilla_workqueue_queue_duration_seconds_bucket{controller="scheduler",name="scheduler",le="0.001"} 10
flotilla_workqueue_queue_duration_seconds_bucket{controller="scheduler",name="scheduler",le="0.01"} 10
flotilla_workqueue_queue_duration_seconds_bucket{controller="scheduler",name="scheduler",le="0.1"} 50
flotilla_workqueue_queue_duration_seconds_bucket{controller="scheduler",name="scheduler",le="1"} 108
flotilla_workqueue_queue_duration_seconds_bucket{controller="scheduler",name="scheduler",le="10"} 110
flotilla_workqueue_queue_duration_seconds_bucket{controller="scheduler",name="scheduler",le="+Inf"} 110
flotilla_workqueue_queue_duration_seconds_sum{controller="scheduler",name="scheduler"} 60.005
flotilla_workqueue_queue_duration_seconds_count{controller="scheduler",name="scheduler"} 110
flotilla_workqueue_queue_duration_seconds_bucket{controller="cluster-status",name="cluster-status",le="0.001"} 5
flotilla_workqueue_queue_duration_seconds_bucket{controller="cluster-status",name="cluster-status",le="+Inf"} 5
flotilla_workqueue_queue_duration_seconds_sum{controller="cluster-status",name="cluster-status"} 0.001
flotilla_workqueue_queue_duration_seconds_count{controller="cluster-status",name="cluster-status"} 5
flotilla_workqueue_queue_duration_seconds_bucket{controller="binding",name="binding",le="0.001"} 4
flotilla_workqueue_queue_duration_seconds_bucket{controller="binding",name="binding",le="+Inf"} 4
flotilla_workqueue_queue_duration_seconds_sum{controller="binding",name="binding"} 0.002
flotilla_workqueue_queue_duration_seconds_count{controller="binding",name="binding"} 4
# TYPE flotilla_workqueue_work_duration_seconds histogram
flotilla_workqueue_work_duration_seconds_bucket{controller="scheduler",name="scheduler",le="0.001"} 0
flotilla_workqueue_work_duration_seconds_bucket{controller="scheduler",name="scheduler",le="0.01"} 10
flotilla_workqueue_work_duration_seconds_bucket{controller="scheduler",name="scheduler",le="0.1"} 110
flotilla_workqueue_work_duration_seconds_bucket{controller="scheduler",name="scheduler",le="1"} 110
flotilla_workqueue_work_duration_seconds_bucket{controller="scheduler",name="scheduler",le="10"} 110
flotilla_workqueue_work_duration_seconds_bucket{controller="scheduler",name="scheduler",le="+Inf"} 110
flotilla_workqueue_work_duration_seconds_sum{controller="scheduler",name="scheduler"} 3.05
flotilla_workqueue_work_duration_seconds_count{controller="scheduler",name="scheduler"} 110
flotilla_workqueue_work_duration_seconds_bucket{controller="binding",name="binding",le="0.01"} 4
flotilla_workqueue_work_duration_seconds_bucket{controller="binding",name="binding",le="+Inf"} 4
flotilla_workqueue_work_duration_seconds_sum{controller="binding",name="binding"} 0.02
flotilla_workqueue_work_duration_seconds_count{controller="binding",name="binding"} 4
# TYPE flotilla_controller_reconcile_total counter
flotilla_controller_reconcile_total{controller="scheduler",result="success"} 105
flotilla_controller_reconcile_total{controller="scheduler",result="error"} 5
flotilla_controller_reconcile_total{controller="binding",result="success"} 4
# TYPE workqueue_work_duration_seconds histogram
workqueue_work_duration_seconds_bucket{name="garbage_collector_attempt_to_delete",le="0.01"} 2
workqueue_work_duration_seconds_bucket{name="garbage_collector_attempt_to_delete",le="+Inf"} 2
workqueue_work_duration_seconds_sum{name="garbage_collector_attempt_to_delete"} 0.004
workqueue_work_duration_seconds_count{name="garbage_collector_attempt_to_delete"} 2
# TYPE apiserver_flowcontrol_request_wait_duration_seconds histogram
apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute="true",flow_schema="flotilla-controllers",priority_level="flotilla-controllers",le="0.1"} 30
apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute="true",flow_schema="flotilla-controllers",priority_level="flotilla-controllers",le="1"} 40
apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute="true",flow_schema="flotilla-controllers",priority_level="flotilla-controllers",le="+Inf"} 40
apiserver_flowcontrol_request_wait_duration_seconds_sum{execute="true",flow_schema="flotilla-controllers",priority_level="flotilla-controllers"} 10
apiserver_flowcontrol_request_wait_duration_seconds_count{execute="true",flow_schema="flotilla-controllers",priority_level="flotilla-controllers"} 40
apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute="false",flow_schema="flotilla-controllers",priority_level="flotilla-controllers",le="0.1"} 0
apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute="false",flow_schema="flotilla-controllers",priority_level="flotilla-controllers",le="1"} 0
apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute="false",flow_schema="flotilla-controllers",priority_level="flotilla-controllers",le="+Inf"} 2
apiserver_flowcontrol_request_wait_duration_seconds_sum{execute="false",flow_schema="flotilla-controllers",priority_level="flotilla-controllers"} 60
apiserver_flowcontrol_request_wait_duration_seconds_count{execute="false",flow_schema="flotilla-controllers",priority_level="flotilla-controllers"} 2
# TYPE apiserver_flowcontrol_request_execution_seconds histogram
apiserver_flowcontrol_request_execution_seconds_bucket{flow_schema="flotilla-controllers",priority_level="flotilla-controllers",type="mutating",le="0.1"} 40
apiserver_flowcontrol_request_execution_seconds_bucket{flow_schema="flotilla-controllers",priority_level="flotilla-controllers",type="mutating",le="+Inf"} 40
apiserver_flowcontrol_request_execution_seconds_sum{flow_schema="flotilla-controllers",priority_level="flotilla-controllers",type="mutating"} 2
apiserver_flowcontrol_request_execution_seconds_count{flow_schema="flotilla-controllers",priority_level="flotilla-controllers",type="mutating"} 40
`

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6*math.Max(1, math.Abs(b)) }

func TestQueuesSince(t *testing.T) {
	parse := func(text string) queueMetrics {
		m, err := parseHubMetrics(strings.NewReader(text), expfmt.NewFormat(expfmt.TypeTextPlain))
		if err != nil {
			t.Fatal(err)
		}
		return queuesOf(m)
	}
	stats := parse(queuesAfter).since(parse(queuesBefore))
	var names []string
	for _, s := range stats {
		names = append(names, s.Queue)
	}
	// The busiest first; cluster-status took nothing during the wave.
	if got, want := strings.Join(names, ","), "scheduler,apf/flotilla-controllers,binding,k8s/garbage_collector_attempt_to_delete"; got != want {
		t.Fatalf("queues = %s, want %s", got, want)
	}
	s := stats[0]
	want := map[string]float64{
		"items": 100, "wait mean": 0.6, "wait sum": 60,
		// Rank 50 of 100 is the 10th of the 58 items in (0.1, 1]; rank 99 the first of the 2 in (1, 10].
		"wait p50": 0.1 + 0.9*10/58, "wait p99": 1 + 9*1.0/2,
		"work mean": 0.03, "work p50": 0.01 + 0.09*50/100, "work p99": 0.01 + 0.09*99/100,
		"success": 95, "error": 5,
	}
	got := map[string]float64{
		"items": s.Items, "wait mean": s.Wait["mean"], "wait sum": s.Wait["sum"], "wait p50": s.Wait["p50"], "wait p99": s.Wait["p99"],
		"work mean": s.Work["mean"], "work p50": s.Work["p50"], "work p99": s.Work["p99"],
		"success": s.Reconciles["success"], "error": s.Reconciles["error"],
	}
	for k, w := range want {
		if !near(got[k], w) {
			t.Errorf("scheduler %s = %v, want %v", k, got[k], w)
		}
	}
	// A priority level sums its flow schemas' series, the requests turned away included.
	if a := stats[1]; a.Items != 40 || !near(a.Wait["mean"], 70.0/42) || !near(a.Wait["p50"], 0.1*21/30) || !near(a.Work["sum"], 2) {
		t.Errorf("priority level = %+v, want 40 requests, 42 waits of 70 s in all", a)
	}
	// A queue that appeared during the wave counts from zero.
	if b := stats[2]; b.Items != 4 || !near(b.Work["mean"], 0.005) || b.Reconciles["success"] != 4 {
		t.Errorf("binding = %+v, want 4 items of 5 ms, 4 successes", b)
	}

	var out bytes.Buffer
	printQueues(&out, "", stats)
	for _, line := range []string{"scheduler                                    100 |    0.6000   0.255   5.500    60.0 |    0.0300   0.055   0.099     3.0 | error 5, success 95"} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("table lacks %q:\n%s", line, out.String())
		}
	}
}

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

// TestNativeBucketsThroughTheHub observes durations into a histogram shaped like controller-runtime's
// workqueue histograms, serves it the way the hub does (controller-runtime's registry bridged under
// flotilla_*, encoded as protocol buffers) and reads it back: the p99 comes from the native buckets, within
// their 10%, where the classic buckets (a factor of ten apart) would say 5.5 s for 3 s.
func TestNativeBucketsThroughTheHub(t *testing.T) {
	source := prometheus.NewRegistry()
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "workqueue_queue_duration_seconds", Buckets: prometheus.ExponentialBuckets(10e-9, 10, 12),
		NativeHistogramBucketFactor: 1.1, NativeHistogramMaxBucketNumber: 100,
	}, []string{"name", "controller"})
	source.MustRegister(latency)
	for i := range 1000 {
		d := 0.02
		if i >= 980 {
			d = 3
		}
		latency.WithLabelValues("scheduler", "scheduler").Observe(d)
	}
	served := prometheus.NewRegistry()
	served.MustRegister(metrics.Bridge{Source: source})
	families, err := served.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var encoded bytes.Buffer
	encoder := expfmt.NewEncoder(&encoded, expfmt.NewFormat(expfmt.TypeProtoDelim))
	for _, f := range families {
		if err := encoder.Encode(f); err != nil {
			t.Fatal(err)
		}
	}
	m, err := parseHubMetrics(&encoded, expfmt.NewFormat(expfmt.TypeProtoDelim))
	if err != nil {
		t.Fatal(err)
	}
	stats := queuesOf(m).since(queueMetrics{})
	if len(stats) != 1 || stats[0].Queue != "scheduler" {
		t.Fatalf("queues = %+v", stats)
	}
	if p99 := stats[0].Wait["p99"]; p99 < 2.7 || p99 > 3.3 {
		t.Errorf("p99 = %v, want 3 within 10%%", p99)
	}
	if p50 := stats[0].Wait["p50"]; p50 < 0.018 || p50 > 0.022 {
		t.Errorf("p50 = %v, want 0.02 within 10%%", p50)
	}
}

func TestValidateProfileDir(t *testing.T) {
	dir := t.TempDir()
	file := dir + "/file"
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"": "", dir: "", dir + "/new/profiles": "", file: "--profile-dir " + file + ": not a directory",
		file + "/below": "--profile-dir " + file + "/below: stat"} {
		err := validateProfileDir(path)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("validateProfileDir(%q) = %v, want %q", path, err, want)
		}
	}
}
