package scheduler

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// ReasonApplicationFailure is the reason of an eviction task and a failover record for a cluster where the
// application stayed unhealthy for the policy's tolerationSeconds.
const ReasonApplicationFailure = "ApplicationFailure"

// FailoverRecordTTL is how long a failover record lasts: a cluster an application failed on stays out of that
// binding's placement this long (unless a person clears the record), and the state the failover preserved
// is injected into the replacement as long.
const FailoverRecordTTL = time.Hour

// defaultApplicationToleration is how long an application may stay unhealthy when the policy gives no
// tolerationSeconds (the API's default).
const defaultApplicationToleration = 300 * time.Second

// applicationFailures returns the clusters of the placement where the application has been Unhealthy for the
// policy's tolerationSeconds, each with a message, and how long until the next cluster that is unhealthy now
// runs out of toleration (0 when none will). The time it became unhealthy is the aggregated status item's
// health transition time, which the binding's status keeps across restarts of the hub. Clusters already
// being left are not failed again.
func applicationFailures(spec *workv1alpha1.ResourceBindingSpec, status *workv1alpha1.ResourceBindingStatus, now time.Time) (map[string]string, time.Duration) {
	if spec.Failover == nil || spec.Failover.Application == nil {
		return nil, 0
	}
	toleration := defaultApplicationToleration
	if s := spec.Failover.Application.DecisionConditions.TolerationSeconds; s != nil {
		toleration = time.Duration(*s) * time.Second
	}
	failed := map[string]string{}
	var wait time.Duration
	for _, item := range status.AggregatedStatus {
		if item.Health != workv1alpha1.ResourceUnhealthy || item.HealthTransitionTime == nil || !placedOn(spec, item.ClusterName) {
			continue
		}
		deadline := item.HealthTransitionTime.Add(toleration)
		if now.Before(deadline) {
			if d := deadline.Sub(now); wait == 0 || d < wait {
				wait = d
			}
			continue
		}
		failed[item.ClusterName] = fmt.Sprintf("the application has been unhealthy there since %s (tolerated for %s)",
			item.HealthTransitionTime.UTC().Format(time.RFC3339), toleration)
	}
	return failed, wait
}

// liveRecords drops the failover records that have expired, and returns how long until the next of the
// others expires (0 when there is none).
func liveRecords(records []workv1alpha1.FailoverRecord, now time.Time) ([]workv1alpha1.FailoverRecord, time.Duration) {
	var live []workv1alpha1.FailoverRecord
	var wait time.Duration
	for _, r := range records {
		if !now.Before(r.ExpirationTimestamp.Time) {
			continue
		}
		live = append(live, r)
		if d := r.ExpirationTimestamp.Sub(now); wait == 0 || d < wait {
			wait = d
		}
	}
	return live, wait
}

// withApplicationFailures returns records plus a new ApplicationFailure record for each failed cluster, so
// that the scheduler's FailoverRecords filter keeps those clusters out of the placement it is about to try.
func withApplicationFailures(records []workv1alpha1.FailoverRecord, failed map[string]string, clusters []workv1alpha1.TargetCluster, now time.Time) []workv1alpha1.FailoverRecord {
	out := slices.Clone(records)
	before := make([]string, len(clusters))
	for i, c := range clusters {
		before[i] = c.Name
	}
	for _, name := range slices.Sorted(maps.Keys(failed)) {
		out = append(out, workv1alpha1.FailoverRecord{FromCluster: name, Reason: ReasonApplicationFailure,
			CreationTimestamp: &metav1.Time{Time: now}, ExpirationTimestamp: metav1.NewTime(now.Add(FailoverRecordTTL)),
			ClustersBeforeFailover: before})
	}
	return out
}

// FailoverRecords keeps a binding off the clusters its application failed on, while their record lasts. A
// person who clears the record lets the cluster host the binding again.
type FailoverRecords struct{}

func (FailoverRecords) Name() string { return "FailoverRecords" }

func (FailoverRecords) Filter(b *workv1alpha1.ResourceBindingSpec, c *clusterv1alpha1.Cluster) string {
	now := time.Now()
	for _, r := range b.FailoverRecords {
		if r.FromCluster == c.Name && r.Reason == ReasonApplicationFailure && now.Before(r.ExpirationTimestamp.Time) {
			return "have a failover record of this binding's application until " + r.ExpirationTimestamp.UTC().Format(time.RFC3339)
		}
	}
	return ""
}

// applicationFailover returns the application failover behaviour's purge mode and grace period, the
// defaults when the policy leaves them out.
func applicationFailover(spec *workv1alpha1.ResourceBindingSpec) (policyv1alpha1.PurgeMode, *int32) {
	purge, grace := policyv1alpha1.PurgeGracefully, (*int32)(nil)
	if spec.Failover == nil || spec.Failover.Application == nil {
		return purge, grace
	}
	if a := spec.Failover.Application; a.PurgeMode != "" {
		purge = a.PurgeMode.Canonical()
	}
	return purge, spec.Failover.Application.GracePeriodSeconds
}

// statePreservation returns the rules that apply to a cluster left for reason, nil when none do.
func statePreservation(spec *workv1alpha1.ResourceBindingSpec, reason string) []policyv1alpha1.StatePreservationRule {
	if spec.Failover == nil {
		return nil
	}
	var sp *policyv1alpha1.StatePreservation
	switch {
	case reason == ReasonApplicationFailure && spec.Failover.Application != nil:
		sp = spec.Failover.Application.StatePreservation
	case reason == ReasonTaintUntolerated && spec.Failover.Cluster != nil:
		sp = spec.Failover.Cluster.StatePreservation
	}
	if sp == nil {
		return nil
	}
	return sp.Rules
}

// evictionCause is the few words of an event that say why a cluster is left.
func evictionCause(task workv1alpha1.GracefulEvictionTask) string {
	switch {
	case task.Reason == ReasonApplicationFailure:
		return "application unhealthy"
	case task.Reason == ReasonTaintUntolerated && strings.Contains(task.Message, clusterv1alpha1.TaintClusterUnreachable+":"):
		return "cluster unreachable"
	case task.Reason == ReasonTaintUntolerated && strings.Contains(task.Message, clusterv1alpha1.TaintClusterNotReady+":"):
		return "cluster not ready"
	case task.Reason == ReasonPlacementChanged:
		return "placement changed"
	}
	return task.Message
}
