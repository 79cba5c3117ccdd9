package metrics

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// renames maps the prefixes of controller-runtime's metrics to the names Flotilla serves them under, in the
// hub and in the agent alike. Other metrics of its registry (client-go's rest_client_*, leader election) are
// left out unless Bridge.Client says otherwise: the embedded kube-apiserver already serves client-go's under
// the same names, for the whole process.
var renames = map[string]string{
	"flotilla_":           "flotilla_",
	"controller_runtime_": "flotilla_controller_",
	"workqueue_":          "flotilla_workqueue_",
}

// clientPrefix is the prefix of client-go's metrics, which keep their names.
const clientPrefix = "rest_client_"

// Bridge is a collector that copies the flotilla_*, controller_runtime_* and workqueue_* metrics of another
// registry at each scrape, renamed to flotilla_* (flotilla_controller_reconcile_total,
// flotilla_workqueue_depth, ...). It describes nothing in advance: the metrics it copies come and go with the
// controllers.
type Bridge struct {
	Source prometheus.Gatherer
	// Client also copies client-go's rest_client_* metrics, under their own names: for a process without an
	// API server of its own that would serve them.
	Client bool
}

// Describe sends nothing, which makes Bridge an unchecked collector.
func (Bridge) Describe(chan<- *prometheus.Desc) {}

// Collect gathers Source and sends its metrics under their new names. A failed gather sends what was
// gathered, and an invalid metric in place of the rest, so the scrape shows the error.
func (b Bridge) Collect(ch chan<- prometheus.Metric) {
	families, err := b.Source.Gather()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(prometheus.NewDesc("flotilla_metrics_bridge_error", "Gathering controller metrics failed.", nil, nil), err)
	}
	for _, f := range families {
		name, ok := rename(f.GetName())
		if !ok && b.Client && strings.HasPrefix(f.GetName(), clientPrefix) {
			name, ok = f.GetName(), true
		}
		if !ok {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := make([]string, len(m.GetLabel()))
			for i, l := range m.GetLabel() {
				labels[i] = l.GetName()
			}
			ch <- copied{desc: prometheus.NewDesc(name, f.GetHelp(), labels, nil), metric: m}
		}
	}
}

func rename(name string) (string, bool) {
	for from, to := range renames {
		if rest, ok := strings.CutPrefix(name, from); ok {
			return to + rest, true
		}
	}
	return "", false
}

// copied is a gathered metric sent again under another description: its type, value and labels stay.
type copied struct {
	desc   *prometheus.Desc
	metric *dto.Metric
}

func (c copied) Desc() *prometheus.Desc { return c.desc }

func (c copied) Write(out *dto.Metric) error {
	proto.Merge(out, c.metric)
	return nil
}
