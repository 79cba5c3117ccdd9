// Package measure holds what Flotilla's benchmarks measure with, apart from any scenario: percentiles, a
// recorder of when each object reached each stage, requests timed by their client, the hub's own counters
// (API requests, controller workqueues and priority levels, read from its /metrics as classic or native
// histograms), profiles of the hub, the size of what its etcd stores, and charts of the results.
package measure
