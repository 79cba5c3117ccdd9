package measure

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"k8s.io/client-go/kubernetes"
)

// HubMetrics is one scrape of the hub's /metrics, by family name. The hub's kube-apiserver serves there its
// own metrics (apiserver_request_total, ...), those of the embedded kube-controller-manager's queues
// (workqueue_*), and Flotilla's controllers' (flotilla_controller_*, flotilla_workqueue_*).
type HubMetrics map[string]*dto.MetricFamily

// ScrapeHubMetrics reads the hub's /metrics as the admin. It asks for the protocol-buffer format, which
// carries the controllers' native histograms (buckets 10% wide) besides the classic buckets (a factor of ten
// wide), and reads whichever format the hub answers with.
func ScrapeHubMetrics(ctx context.Context, hub kubernetes.Interface) (HubMetrics, error) {
	var contentType string
	raw, err := hub.Discovery().RESTClient().Get().AbsPath("/metrics").
		SetHeader("Accept", string(expfmt.NewFormat(expfmt.TypeProtoDelim))+",text/plain;q=0.5").
		Do(ctx).ContentType(&contentType).Raw()
	if err != nil {
		return nil, fmt.Errorf("reading the hub's metrics: %w", err)
	}
	format := expfmt.Format(contentType)
	if format.FormatType() != expfmt.TypeProtoDelim {
		format = expfmt.NewFormat(expfmt.TypeTextPlain)
	}
	return parseHubMetrics(bytes.NewReader(raw), format)
}

// parseHubMetrics reads metric families in format (the Prometheus text format or delimited protocol buffers).
func parseHubMetrics(r io.Reader, format expfmt.Format) (HubMetrics, error) {
	decoder := expfmt.NewDecoder(r, format)
	families := HubMetrics{}
	for {
		f := &dto.MetricFamily{}
		if err := decoder.Decode(f); errors.Is(err, io.EOF) {
			return families, nil
		} else if err != nil {
			return nil, fmt.Errorf("parsing the hub's metrics: %w", err)
		}
		families[f.GetName()] = f
	}
}

// labelsOf returns a series' labels by name.
func labelsOf(m *dto.Metric) map[string]string {
	labels := make(map[string]string, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	return labels
}

// GoMemory is where a Go process's memory goes, from its runtime's metrics (runtime/metrics, which the
// hub serves as go_* families), in MiB: each memory class, the heap size at which the next collection
// starts, and how many goroutines run.
type GoMemory struct {
	// ClassesMiB are the runtime's memory classes (go_memory_classes_<class>_bytes) by class:
	// heap_objects (live, or dead and not yet swept), heap_unused, heap_free (free, not returned to the
	// system), heap_released, heap_stacks, os_stacks, metadata_*, profiling_buckets, other, total.
	ClassesMiB  map[string]float64 `json:"classesMiB"`
	HeapGoalMiB float64            `json:"heapGoalMiB"`
	Goroutines  float64            `json:"goroutines"`
}

// GoMemoryOf reads a scrape's Go memory classes, heap goal and goroutines.
func GoMemoryOf(metrics HubMetrics) GoMemory {
	const prefix, suffix = "go_memory_classes_", "_bytes"
	value := func(name string) float64 {
		f := metrics[name]
		if f == nil || len(f.GetMetric()) == 0 {
			return 0
		}
		m := f.GetMetric()[0]
		if m.GetGauge() != nil {
			return m.GetGauge().GetValue()
		}
		return m.GetCounter().GetValue()
	}
	g := GoMemory{ClassesMiB: map[string]float64{}, HeapGoalMiB: value("go_gc_heap_goal_bytes") / (1 << 20), Goroutines: value("go_goroutines")}
	for name := range metrics {
		if class, ok := strings.CutPrefix(name, prefix); ok && strings.HasSuffix(class, suffix) {
			g.ClassesMiB[strings.TrimSuffix(class, suffix)] = value(name) / (1 << 20)
		}
	}
	return g
}
