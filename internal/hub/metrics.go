package hub

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/component-base/metrics/legacyregistry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/flotilla-io/flotilla/internal/metrics"
)

// serveMetrics makes the hub's API server serve Flotilla's metrics at its /metrics, behind its authentication
// and authorization like every other path (one scrape, one credential): controller-runtime's registry, which
// holds Flotilla's and the controllers' metrics, is bridged into the legacy registry kube-apiserver serves,
// and the fleet's state is read from the controllers' cache at each scrape. A second hub in one process
// (tests) serves the first one's: the collectors describe nothing in advance, so registering them twice would
// serve every series twice.
func serveMetrics(cache client.Reader) error {
	var err error
	serveMetricsOnce.Do(func() {
		metrics.RegisterHub()
		for _, c := range []prometheus.Collector{metrics.Bridge{Source: crmetrics.Registry}, metrics.Fleet{Reader: cache}} {
			if err = legacyregistry.Registerer().Register(c); err != nil {
				return
			}
		}
	})
	return err
}

var serveMetricsOnce sync.Once
