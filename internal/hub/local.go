package hub

import (
	"context"

	"github.com/flotilla-io/flotilla/internal/clusterset"
	"github.com/flotilla-io/flotilla/internal/controlplane"
)

// StartLocal runs an embedded hub in this process on a free loopback port, with its data in dataDir, for
// tests and benchmarks. It returns once the hub is ready and its controllers run, with a function that stops
// it. A process can run only one: the embedded Kubernetes components keep process-wide state.
func StartLocal(dataDir string, progress func(string)) (*Hub, func(), error) {
	ports, err := controlplane.FreePorts(1)
	if err != nil {
		return nil, nil, err
	}
	o := NewOptions()
	o.DataDir, o.BindAddress, o.SecurePort, o.DashboardPort = dataDir, "127.0.0.1", ports[0], 0
	o.AllowLocalMemberEndpoints = true   // members of tests and benchmarks listen on loopback
	o.AllowLocalChartRepositories = true // and so do their chart repositories
	// As in flotilla up, the hub's admin is every member's admin through the proxy.
	o.ProxySystemGroups = []string{"system:masters"}
	// Open, as flotilla up's fleet: the suites and benchmarks place namespaced templates without
	// ClusterSetBindings. A test that needs a hub requiring bindings switches the record at run time
	// (testenv.ClusterSetMode).
	o.ClusterSetMode = clusterset.Open
	if err := o.Validate(); err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	h, err := Start(ctx, o, progress)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	return h, func() { cancel(); <-done }, nil
}
