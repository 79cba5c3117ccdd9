// Package metrics holds Flotilla's own Prometheus metrics, all named flotilla_*: what the controllers count as
// they work (evictions, apply errors, propagation latency), what the fleet looks like at scrape time (clusters
// by readiness, bindings by condition, heartbeat ages), and the bridge that serves them, with
// controller-runtime's work queue and reconcile metrics, at the hub's kube-apiserver /metrics.
//
// The metrics live in controller-runtime's registry, which the agent serves on its own metrics address; the
// hub's kube-apiserver serves its legacy registry, into which Bridge copies them at each scrape.
package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Stages of a propagation: the member applied the template's generation, and reports it healthy.
const (
	StageApplied = "applied"
	StageHealthy = "healthy"
)

var (
	// Evictions counts the graceful eviction tasks the scheduler started, by reason (TaintUntolerated,
	// ApplicationFailure, PlacementChanged).
	Evictions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "flotilla_evictions_total",
		Help: "Graceful evictions the scheduler started: a binding leaving a cluster, by reason.",
	}, []string{"reason"})

	// WorkApplyErrors counts manifests a Work could not apply to its member, by cluster and reason.
	WorkApplyErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "flotilla_work_apply_errors_total",
		Help: "Manifests of Works that failed to apply in a member cluster, by cluster and reason.",
	}, []string{"cluster", "reason"})

	// PropagationSeconds is the time from the hub seeing a template's generation to a member applying it and
	// to the member reporting it healthy.
	PropagationSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "flotilla_propagation_duration_seconds",
		Help: "Seconds from the hub seeing a template change to a member cluster applying it (stage=applied) and reporting it healthy (stage=healthy).",
		// 50 ms to about 100 s: a propagation in a small fleet takes well under a second, a Deployment's
		// rollout to healthy tens of seconds.
		Buckets: prometheus.ExponentialBuckets(0.05, 2, 12),
	}, []string{"stage"})

	// TemplateWatches has a series, 1, for each kind and namespace whose templates the hub watches (namespace
	// empty: every namespace), and none for what it does not watch.
	TemplateWatches = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "flotilla_template_watches",
		Help: "Templates the hub watches: 1 per kind and namespace (empty: every namespace) where a policy selects the kind or bindings of it exist.",
	}, []string{"kind", "namespace"})
)

var hubOnce, agentOnce sync.Once

// RegisterHub adds every Flotilla metric to controller-runtime's registry, once per process; the hub bridges
// that registry (Bridge).
func RegisterHub() {
	hubOnce.Do(func() { crmetrics.Registry.MustRegister(Evictions, PropagationSeconds, Heartbeats, TemplateWatches) })
	RegisterAgent()
}

// RegisterAgent adds the metrics an agent moves, its apply errors, to controller-runtime's registry, which
// the agent serves on its metrics address; the hub's metrics would only show zeros there.
func RegisterAgent() {
	agentOnce.Do(func() { crmetrics.Registry.MustRegister(WorkApplyErrors) })
}
