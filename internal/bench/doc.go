// Package bench holds Flotilla's benchmarks: commands that start their own environment, measure, and report
// percentiles as a table and as JSON. Figures are never asserted anywhere.
//
// The package holds the scenarios (propagation, scale, register, failover, mcs, proxy, fleet-list,
// dashboard), which start their hub and clusters through one preamble (fleet.go): members as `flotilla up`
// starts them, or hollow agents simulated in this process (package hollow). What they measure with
// (percentiles, a stage recorder, the hub's request and queue counters, profiles, storage, charts) is
// package measure.
package bench
