package bench

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
// slowed by something else (CPU, the API server's priority and fairness), working means the work itself.

// queueOwners are the two registries of queues the hub serves: controller-runtime's, which holds Flotilla's
// controllers (named as in --controllers) and which the hub serves renamed to flotilla_*
// (internal/metrics/bridge.go), and Kubernetes' own, served as they are. Queues of the embedded
// kube-controller-manager and kube-apiserver (garbage collector, namespace, ...) go to whichever of the two
// registered client-go's metrics first; their names tell them apart.
var queueOwners = []struct{ owner, prefix string }{{"", "flotilla_"}, {"k8s/", ""}}

// queueKey names one workqueue: its owner and its name label.
type queueKey struct{ owner, name string }

// queueSeries are the queue and work histograms of one queue, and its reconciles by result (Flotilla's
// controllers only).
type queueSeries struct {
	wait, work histogram
	reconciles map[string]float64
}

// queueMetrics are every queue's series in one scrape.
type queueMetrics map[queueKey]queueSeries

// queuesOf reads the workqueue histograms and the reconcile counters from a scrape of the hub's metrics.
func queuesOf(metrics hubMetrics) queueMetrics {
	queues := queueMetrics{}
	for _, o := range queueOwners {
		for family, set := range map[string]func(*queueSeries, histogram){
			"workqueue_queue_duration_seconds": func(s *queueSeries, h histogram) { s.wait = h },
			"workqueue_work_duration_seconds":  func(s *queueSeries, h histogram) { s.work = h },
		} {
			for _, m := range metrics[o.prefix+family].GetMetric() {
				key := queueKey{owner: o.owner, name: labelsOf(m)["name"]}
				s := queues[key]
				set(&s, histogramOf(m.GetHistogram()))
				queues[key] = s
			}
		}
	}
	// controller-runtime names a controller's queue after the controller.
	for _, m := range metrics["flotilla_controller_reconcile_total"].GetMetric() {
		labels := labelsOf(m)
		key := queueKey{owner: "", name: labels["controller"]}
		s := queues[key]
		if s.reconciles == nil {
			s.reconciles = map[string]float64{}
		}
		s.reconciles[labels["result"]] += m.GetCounter().GetValue()
		queues[key] = s
	}
	return queues
}

// QueueStats is one workqueue during a wave.
type QueueStats struct {
	// Queue is the controller's queue: its name in controller-runtime's registry (Flotilla's controllers by
	// their --controllers name), k8s/NAME in Kubernetes' own.
	Queue string `json:"queue"`
	// Items is how many items workers took from the queue (one item may stand for several events).
	Items float64 `json:"items"`
	// Wait and Work are, in seconds, the mean, p50 and p99 (estimated from the histogram's buckets) and the
	// sum over the items of the time an item waited in the queue, and of the time a worker spent on it.
	Wait map[string]float64 `json:"wait"`
	Work map[string]float64 `json:"work"`
	// Reconciles are the controller's reconciles by result (success, error, requeue, requeue_after).
	Reconciles map[string]float64 `json:"reconciles,omitempty"`
}

// since returns the stats of every queue that took an item after before was scraped, the busiest (most
// worker time) first.
func (q queueMetrics) since(before queueMetrics) []QueueStats {
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

// printQueues prints one line per queue: items, then wait and work (mean, p50, p99, sum), then reconciles.
func printQueues(out io.Writer, indent string, stats []QueueStats) {
	if len(stats) == 0 {
		return
	}
	fmt.Fprintf(out, "%s%-40s %7s | %-31s | %-31s | %s\n", indent, "workqueue (seconds)", "items",
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
