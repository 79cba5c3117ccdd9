package hub

import (
	"context"
	"net"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/component-base/metrics/legacyregistry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/flotilla-io/flotilla/internal/metrics"
)

// serveMetrics makes the hub serve Flotilla's metrics: controller-runtime's registry, which holds Flotilla's
// and the controllers' metrics, under Flotilla's names (metrics.Bridge), with the fleet's state read from the
// controllers' cache at each scrape.
//
// The embedded hub serves them at its API server's /metrics, behind its authentication and authorization like
// every other path (one scrape, one credential): they are bridged into the legacy registry kube-apiserver
// serves. A second hub in one process (tests) serves the first one's: the collectors describe nothing in
// advance, so registering them twice would serve every series twice.
//
// A hub over an existing cluster has no API server of its own: it serves them at /metrics on --metrics-port,
// with the probes /healthz and /readyz, over plain HTTP, until ctx ends or the hub stops.
func (h *Hub) serveMetrics(ctx context.Context, o *Options, cache client.Reader) error {
	metrics.RegisterHub()
	fleet := metrics.Fleet{Reader: cache}
	if o.Embedded() {
		var err error
		serveMetricsOnce.Do(func() {
			for _, c := range []prometheus.Collector{metrics.Bridge{Source: crmetrics.Registry}, fleet} {
				if err = legacyregistry.Registerer().Register(c); err != nil {
					return
				}
			}
		})
		return err
	}
	served, err := metrics.NewServedRegistry(fleet)
	if err != nil {
		return err
	}
	ctx, h.stopOps = context.WithCancel(ctx)
	h.ops, err = metrics.Serve(ctx, net.JoinHostPort(o.BindAddress, strconv.Itoa(o.MetricsPort)), "--metrics-port",
		metrics.Endpoints{Metrics: served, Probes: true, NotReady: "the hub has not started its controllers"})
	return err
}

var serveMetricsOnce sync.Once
