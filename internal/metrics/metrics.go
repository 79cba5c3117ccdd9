// Package metrics holds Flotilla's own Prometheus metrics, all named flotilla_*: what the controllers count as
// they work (scheduling attempts, evictions, apply errors, propagation latency), what the fleet looks like at
// scrape time (clusters by readiness, bindings by condition, heartbeat times), the build, and the bridge that
// serves them with controller-runtime's work queue and reconcile metrics under one naming
// (flotilla_controller_*, flotilla_workqueue_*), wherever they are served.
//
// The metrics live in controller-runtime's registry, which nothing serves as it is. The embedded hub's
// kube-apiserver serves its legacy registry, into which Bridge copies them at each scrape; the agent and a hub
// over an existing cluster serve a registry of their own (NewServedRegistry) with Serve, on a plain-HTTP port
// that also carries their probes.
package metrics

import (
	"sync"
	"time"

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

	// WorksWritten counts the Works the binding controller of this hub process created and whose spec it
	// changed: under --shard, each replica's share of the rendering.
	WorksWritten = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "flotilla_works_written_total",
		Help: "Works the hub's binding controller wrote, by operation: create, or update (a changed spec).",
	}, []string{"operation"})

	// SchedulingAttempts counts the scheduler's passes over a binding, by result: scheduled (a placement was
	// decided), unschedulable (nothing fits: the placement stays and Scheduled=False says why), error (a read
	// or write failed; the pass is retried).
	SchedulingAttempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "flotilla_scheduler_attempts_total",
		Help: "Scheduling passes over a binding, by result: scheduled, unschedulable, error.",
	}, []string{"result"})

	// SchedulingSeconds is the time of one scheduling pass, by result as SchedulingAttempts.
	SchedulingSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "flotilla_scheduler_attempt_duration_seconds",
		Help: "Seconds one scheduling pass over a binding took, from reading it to writing its placement and status, by result.",
		// 1 ms to about 4 s: a pass reads from the cache and writes at most twice.
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 13),
	}, []string{"result"})

	// Heartbeats is, per cluster, when the health monitor last saw its heartbeat Lease renewed, in seconds since
	// the epoch: time() minus it is the heartbeat's age at any moment, also while the cluster is silent.
	Heartbeats = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "flotilla_cluster_heartbeat_timestamp_seconds",
		Help: "When the hub last saw the cluster's heartbeat Lease renewed (by its agent, or by the hub for a Push cluster), in seconds since the epoch.",
	}, []string{"cluster"})

	// ControllersWriteLimit is how many writes the embedded hub's controllers may have in flight: lower while
	// the users' writes wait for the hub's CPU (internal/headroom).
	ControllersWriteLimit = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "flotilla_controllers_write_limit",
		Help: "How many writes the hub's controllers may have in flight; it falls while users' writes to the hub are slow.",
	})

	// TemplateWatches has a series, 1, for each kind and namespace whose templates the hub watches (namespace
	// empty: every namespace), and none for what it does not watch.
	TemplateWatches = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "flotilla_template_watches",
		Help: "Templates the hub watches: 1 per kind and namespace (empty: every namespace) where a policy selects the kind or bindings of it exist.",
	}, []string{"kind", "namespace"})
)

// Results of a scheduling pass.
const (
	ResultScheduled     = "scheduled"
	ResultUnschedulable = "unschedulable"
	ResultError         = "error"
)

// ObserveSchedulingAttempt counts one scheduling pass that took d.
func ObserveSchedulingAttempt(result string, d time.Duration) {
	SchedulingAttempts.WithLabelValues(result).Inc()
	SchedulingSeconds.WithLabelValues(result).Observe(d.Seconds())
}

// ObserveHeartbeat records that cluster's heartbeat was seen renewed at t.
func ObserveHeartbeat(cluster string, t time.Time) {
	Heartbeats.WithLabelValues(cluster).Set(float64(t.UnixNano()) / 1e9)
}

// ForgetHeartbeat drops a cluster that left the hub.
func ForgetHeartbeat(cluster string) { Heartbeats.DeleteLabelValues(cluster) }

var hubOnce, agentOnce sync.Once

// RegisterHub adds every Flotilla metric to controller-runtime's registry, once per process; the hub bridges
// that registry (Bridge).
func RegisterHub() {
	hubOnce.Do(func() {
		crmetrics.Registry.MustRegister(Evictions, PropagationSeconds, Heartbeats, TemplateWatches, SchedulingAttempts, SchedulingSeconds,
			WorksWritten, ControllersWriteLimit)
	})
	RegisterAgent()
}

// RegisterAgent adds the metrics an agent moves, its apply errors, and the build's to controller-runtime's
// registry, which the agent serves on its metrics address; the hub's metrics would only show zeros there.
func RegisterAgent() {
	agentOnce.Do(func() { crmetrics.Registry.MustRegister(WorkApplyErrors, build) })
}
