package measure

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// Every controller in the hub process takes its work from a workqueue, and the queue measures, per item, how
// long it waited before a worker took it (queue_duration) and how long the worker took (work_duration). A
// stage that falls behind in a burst shows which of the two grows: waiting means too few workers or workers
// slowed by something else, working means the work itself, whose API requests may in turn wait in the API
// server's priority and fairness queues, measured the same way.

// queueSources are where the hub's /metrics has queues: the workqueues of its controllers, in two registries:
// controller-runtime's, which holds Flotilla's controllers (named as in --controllers) and which the hub
// serves renamed to flotilla_* (internal/metrics/bridge.go), and Kubernetes' own, served as they are (queues
// of the embedded kube-controller-manager and kube-apiserver, garbage collector, namespace, ... go to
// whichever of the two registered client-go's metrics first; their names tell them apart). And the API
// server's priority levels (API Priority and Fairness, apf/LEVEL): the time a request waited for a seat,
// and the time it then took, summed over the level's flow schemas; the controllers' requests have a level of
// their own, flotilla-controllers.
var queueSources = []struct {
	owner, wait, work, label string
}{
	{"", "flotilla_workqueue_queue_duration_seconds", "flotilla_workqueue_work_duration_seconds", "name"},
	{"k8s/", "workqueue_queue_duration_seconds", "workqueue_work_duration_seconds", "name"},
	{"apf/", "apiserver_flowcontrol_request_wait_duration_seconds", "apiserver_flowcontrol_request_execution_seconds", "priority_level"},
}

// queueKey names one queue: its source and its name.
type queueKey struct{ owner, name string }

// queueSeries are the wait and work histograms of one queue, and its reconciles by result (Flotilla's
// controllers only).
type queueSeries struct {
	wait, work histogram
	reconciles map[string]float64
}

// QueueMetrics are every queue's series in one scrape.
type QueueMetrics map[queueKey]queueSeries

// QueuesOf reads the queue histograms and the reconcile counters from a scrape of the hub's metrics.
func QueuesOf(metrics HubMetrics) QueueMetrics {
	queues := QueueMetrics{}
	for _, src := range queueSources {
		for family, add := range map[string]func(*queueSeries, histogram){
			src.wait: func(s *queueSeries, h histogram) { s.wait = s.wait.plus(h) },
			src.work: func(s *queueSeries, h histogram) { s.work = s.work.plus(h) },
		} {
			for _, m := range metrics[family].GetMetric() {
				key := queueKey{owner: src.owner, name: labelsOf(m)[src.label]}
				s := queues[key]
				add(&s, histogramOf(m.GetHistogram()))
				queues[key] = s
			}
		}
	}
	// controller-runtime names a controller's queue after the controller.
	for _, m := range metrics["flotilla_controller_reconcile_total"].GetMetric() {
		labels := labelsOf(m)
		key := queueKey{name: labels["controller"]}
		s := queues[key]
		if s.reconciles == nil {
			s.reconciles = map[string]float64{}
		}
		s.reconciles[labels["result"]] += m.GetCounter().GetValue()
		queues[key] = s
	}
	return queues
}

// QueueStats is one queue during a wave.
type QueueStats struct {
	// Queue is a controller's workqueue: its name in controller-runtime's registry (Flotilla's controllers by
	// their --controllers name), k8s/NAME in Kubernetes' own; or apf/LEVEL, an API priority level.
	Queue string `json:"queue"`
	// Items is how many items workers took from the queue (one item may stand for several events), or how
	// many requests the priority level ran.
	Items float64 `json:"items"`
	// Wait and Work are, in seconds, the mean, p50 and p99 (estimated from the histogram's buckets) and the
	// sum over the items of the time an item waited in the queue, and of the time a worker spent on it (a
	// request's wait for a seat of its priority level, and its execution).
	Wait map[string]float64 `json:"wait"`
	Work map[string]float64 `json:"work"`
	// Reconciles are the controller's reconciles by result (success, error, requeue, requeue_after).
	Reconciles map[string]float64 `json:"reconciles,omitempty"`
}

// Since returns the stats of every queue that took an item after before was scraped, the busiest (most
// worker time) first.
func (q QueueMetrics) Since(before QueueMetrics) []QueueStats {
	var stats []QueueStats
	for key, s := range q {
		b := before[key]
		wait, work := s.wait.minus(b.wait), s.work.minus(b.work)
		if work.count == 0 && wait.count == 0 {
			continue
		}
		st := QueueStats{Queue: key.owner + key.name, Items: work.count, Wait: summarize(wait), Work: summarize(work)}
		for result, n := range s.reconciles {
			if d := n - b.reconciles[result]; d > 0 {
				if st.Reconciles == nil {
					st.Reconciles = map[string]float64{}
				}
				st.Reconciles[result] = d
			}
		}
		stats = append(stats, st)
	}
	slices.SortFunc(stats, func(a, b QueueStats) int {
		return cmp.Or(cmp.Compare(b.Work["sum"], a.Work["sum"]), cmp.Compare(a.Queue, b.Queue))
	})
	return stats
}

func summarize(h histogram) map[string]float64 {
	return map[string]float64{"mean": h.mean(), "p50": h.quantile(0.5), "p99": h.quantile(0.99), "sum": h.sum}
}

// PrintQueues prints one line per queue: items, then wait and work (mean, p50, p99, sum), then reconciles.
func PrintQueues(out io.Writer, indent string, stats []QueueStats) {
	if len(stats) == 0 {
		return
	}
	fmt.Fprintf(out, "%s%-40s %7s | %-31s | %-31s | %s\n", indent, "queue (seconds)", "items",
		"wait: mean     p50     p99     sum", "work: mean     p50     p99     sum", "reconciles")
	for _, s := range stats {
		var reconciles []string
		for _, result := range slices.Sorted(maps.Keys(s.Reconciles)) {
			reconciles = append(reconciles, fmt.Sprintf("%s %.0f", result, s.Reconciles[result]))
		}
		fmt.Fprintf(out, "%s%-40s %7.0f | %s | %s | %s\n", indent, s.Queue, s.Items, durations(s.Wait), durations(s.Work),
			strings.Join(reconciles, ", "))
	}
}

func durations(d map[string]float64) string {
	return fmt.Sprintf("%9.4f %7.3f %7.3f %7.1f", d["mean"], d["p50"], d["p99"], d["sum"])
}
