// Package hollow simulates pull agents for the benchmarks, as kubemark's hollow nodes simulate kubelets: each
// joins a hub through the real protocol (discovery, CSR, approval) and speaks to it with its own credential
// (Lease, Cluster status, Work acknowledgements), with no member cluster behind it, so that one process can
// stand for thousands of clusters. It measures nothing: the benchmarks that use it (bench scale, register,
// dashboard) do.
package hollow
