package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestBridgeRenamesControllerMetricsAndLeavesOthersOut(t *testing.T) {
	source := prometheus.NewRegistry()
	reconciles := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "controller_runtime_reconcile_total", Help: "Reconciles."}, []string{"controller", "result"})
	depth := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "workqueue_depth", Help: "Depth."}, []string{"name", "controller"})
	latency := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "flotilla_test_seconds", Help: "Latency.", Buckets: []float64{1}})
	rest := prometheus.NewCounter(prometheus.CounterOpts{Name: "rest_client_requests_total", Help: "Requests."})
	source.MustRegister(reconciles, depth, latency, rest)
	reconciles.WithLabelValues("detector", "success").Add(3)
	depth.WithLabelValues("detector", "detector").Set(2)
	latency.Observe(0.5)
	rest.Inc()

	served := prometheus.NewRegistry()
	served.MustRegister(Bridge{Source: source})
	want := `
# HELP flotilla_controller_reconcile_total Reconciles.
# TYPE flotilla_controller_reconcile_total counter
flotilla_controller_reconcile_total{controller="detector",result="success"} 3
# HELP flotilla_test_seconds Latency.
# TYPE flotilla_test_seconds histogram
flotilla_test_seconds_bucket{le="1"} 1
flotilla_test_seconds_bucket{le="+Inf"} 1
flotilla_test_seconds_sum 0.5
flotilla_test_seconds_count 1
# HELP flotilla_workqueue_depth Depth.
# TYPE flotilla_workqueue_depth gauge
flotilla_workqueue_depth{controller="detector",name="detector"} 2
`
	if err := testutil.GatherAndCompare(served, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}

func TestBridgeKeepsClientMetricsWhenAsked(t *testing.T) {
	source := prometheus.NewRegistry()
	rest := prometheus.NewCounter(prometheus.CounterOpts{Name: "rest_client_requests_total", Help: "Requests."})
	election := prometheus.NewGauge(prometheus.GaugeOpts{Name: "leader_election_master_status", Help: "Leading."})
	source.MustRegister(rest, election)
	rest.Inc()
	served := prometheus.NewRegistry()
	served.MustRegister(Bridge{Source: source, Client: true})
	want := `
# HELP rest_client_requests_total Requests.
# TYPE rest_client_requests_total counter
rest_client_requests_total 1
`
	if err := testutil.GatherAndCompare(served, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}
