package measure

import (
	"bytes"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

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

func TestQueuesSince(t *testing.T) {
	parse := func(text string) QueueMetrics {
		m, err := parseHubMetrics(strings.NewReader(text), expfmt.NewFormat(expfmt.TypeTextPlain))
		if err != nil {
			t.Fatal(err)
		}
		return QueuesOf(m)
	}
	stats := parse(queuesAfter).Since(parse(queuesBefore))
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
	PrintQueues(&out, "", stats)
	for _, line := range []string{"scheduler                                    100 |    0.6000   0.255   5.500    60.0 |    0.0300   0.055   0.099     3.0 | error 5, success 95"} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("table lacks %q:\n%s", line, out.String())
		}
	}
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
	stats := QueuesOf(m).Since(QueueMetrics{})
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
