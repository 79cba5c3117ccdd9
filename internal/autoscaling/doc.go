// Package autoscaling scales templates across the fleet: FederatedHPA sets a template's replicas from its pods'
// metrics in every member it is placed in, with the HorizontalPodAutoscaler's algorithm (replicas.go, the
// replica calculation; behavior.go, the stabilization windows and rate policies), and CronFederatedHPA sets a
// template's replicas or a FederatedHPA's bounds at cron schedules. The metrics are read through the hub's
// member access (internal/proxy's Backends: stored credentials for Push members, the tunnel for Pull ones);
// no HorizontalPodAutoscaler is created in a member, and the template's placement divides the replicas.
//
// Kubernetes' own ReplicaCalculator cannot be reused: its Tolerances has unexported fields and no constructor,
// so from outside its package it only runs with a tolerance of zero, and the behavior logic is methods on the
// HorizontalController's unexported state. This package follows both exactly (the same grouping of ready,
// unready and missing pods, the same ratios and roundings, the same windows and policies), reusing what the
// upstream packages export: the usage-ratio functions of podautoscaler/metrics and the behavior defaults of
// the autoscaling/v2 API.
package autoscaling
