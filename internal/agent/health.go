package agent

import (
	"context"

	"github.com/flotilla-io/flotilla/internal/metrics"
)

// ServeHealth serves the agent's probes on addr (HOST:PORT; "" or "0" serves none) until ctx ends: /healthz
// answers while the process serves (also while a join waits for its token or for flotilla accept, which may
// take long), /readyz once the agent has joined and runs with a current hub certificate (Run sets it).
func ServeHealth(ctx context.Context, addr string) (*metrics.Server, error) {
	return metrics.Serve(ctx, addr, "--health-probe-bind-address", metrics.Endpoints{Probes: true,
		NotReady: "not joined, or not running with a current hub certificate"})
}

// serveMetrics serves the agent's metrics on addr until ctx ends, under the names the hub serves its own.
func serveMetrics(ctx context.Context, addr string) (*metrics.Server, error) {
	if addr == "" || addr == "0" {
		return nil, nil
	}
	served, err := metrics.NewServedRegistry()
	if err != nil {
		return nil, err
	}
	return metrics.Serve(ctx, addr, "--metrics-bind-address", metrics.Endpoints{Metrics: served})
}
