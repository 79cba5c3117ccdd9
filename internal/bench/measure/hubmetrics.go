package measure

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

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
