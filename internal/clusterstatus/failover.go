package clusterstatus

import (
	"fmt"
	"math"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// Reasons of the Failover condition.
const (
	// ReasonTainted: the cluster carries a NoExecute health taint; bindings move away as their toleration ends.
	ReasonTainted = "Tainted"
	// ReasonMassFailureGuard: so many clusters are unreachable that the hub itself is probably cut off.
	ReasonMassFailureGuard = "MassFailureGuard"
	// ReasonHubStarting: the hub has not yet watched the fleet for a whole grace period.
	ReasonHubStarting = "HubStarting"
	// ReasonRateLimited: other clusters were tainted just before; this one waits its turn.
	ReasonRateLimited = "RateLimited"
)

// Defaults of FailoverOptions, those of the node lifecycle controller in Kubernetes: it stops evicting from
// a zone where more than 55% of the nodes are unhealthy, and evicts from 0.1 nodes per second.
const (
	DefaultUnhealthyThreshold = 0.55
	DefaultFailoverRate       = 6
)

// FailoverOptions say when the health monitor taints an unhealthy cluster NoExecute, which makes the
// scheduler move its workloads elsewhere once their toleration runs out.
type FailoverOptions struct {
	// UnhealthyThreshold is the share of clusters that may be unreachable at once: above it, the hub is more
	// likely cut off from the fleet than the fleet from the world, so no cluster is tainted NoExecute for
	// being unreachable and the taints already there are removed until the share drops again.
	UnhealthyThreshold float64
	// PerMinute is how many clusters per minute may get a NoExecute health taint.
	PerMinute float64
}

// fleetView is what a failover decision needs to know beyond the cluster itself.
type fleetView struct {
	// unreachable of total clusters have sent no heartbeat for the grace period.
	unreachable, total int
	// startingFor is how much longer the hub is in its first grace period (0: it is past it). Until then it
	// cannot tell a silent cluster from one it has not heard yet.
	startingFor time.Duration
}

// failoverVerdict is the NoExecute health taint a cluster must carry, and the Failover condition saying why.
type failoverVerdict struct {
	// taint is the key of the NoExecute health taint; empty for none.
	taint string
	// condition is the Failover condition; nil for a healthy cluster, which carries none.
	condition *metav1.Condition
	// retry is when to decide again, for a verdict that may change without any event (0: on change only).
	retry time.Duration
}

// noExecuteFor returns the NoExecute health taint a cluster's health calls for, given the NoSchedule taint
// it must carry and when the hub last saw its heartbeat (nil: never, or not since the hub started). An
// unreachable cluster gets it one heartbeat period after the grace period: clusters that went silent
// together (the hub lost its network) have all passed their grace period by then, so the mass-failure guard
// counts them together before the first one is tainted. The second value is how long until it is due.
func noExecuteFor(taint string, renewed *time.Time, now time.Time, grace time.Duration) (string, time.Duration) {
	if taint != clusterv1alpha1.TaintClusterUnreachable || renewed == nil {
		return taint, 0
	}
	if due := renewed.Add(grace + RenewalPeriod(grace)); now.Before(due) {
		return "", due.Sub(now)
	}
	return taint, 0
}

// decideFailover decides the NoExecute health taint of a cluster whose health calls for want (empty when
// healthy) and which carries has now. take asks the rate limiter for one taint; it says how long to wait
// when none is left.
func decideFailover(want, has string, fleet fleetView, opts FailoverOptions, take func() (bool, time.Duration)) failoverVerdict {
	if want == "" {
		return failoverVerdict{}
	}
	// While the cluster stays unhealthy, look again now and then: the guard may change without an event on it.
	v := failoverVerdict{taint: has, retry: HeartbeatPeriod}
	held := func(reason, message string) failoverVerdict {
		v.condition = &metav1.Condition{Type: clusterv1alpha1.ClusterConditionFailover, Status: metav1.ConditionFalse, Reason: reason, Message: message}
		return v
	}
	switch {
	case want == clusterv1alpha1.TaintClusterUnreachable && float64(fleet.unreachable) > opts.UnhealthyThreshold*float64(fleet.total):
		v.taint = ""
		return held(ReasonMassFailureGuard, fmt.Sprintf("%d of %d clusters are unreachable, more than %s: the hub itself may be cut off, so no workload "+
			"moves and no cluster is tainted NoExecute until fewer are unreachable", fleet.unreachable, fleet.total, percent(opts.UnhealthyThreshold)))
	case has == want:
	case fleet.startingFor > 0:
		v.retry = min(v.retry, fleet.startingFor)
		return held(ReasonHubStarting, fmt.Sprintf("the hub started less than a grace period ago; no cluster is tainted NoExecute for another %s",
			fleet.startingFor.Round(time.Second)))
	case has == "": // a new taint, not one key swapped for the other
		if ok, wait := take(); !ok {
			v.retry = min(v.retry, wait)
			return held(ReasonRateLimited, fmt.Sprintf("at most %g clusters per minute are tainted NoExecute; this one waits %s",
				opts.PerMinute, wait.Round(time.Second)))
		}
	}
	v.taint = want
	v.condition = &metav1.Condition{Type: clusterv1alpha1.ClusterConditionFailover, Status: metav1.ConditionTrue, Reason: ReasonTainted,
		Message: "tainted " + want + ":NoExecute: workloads move to other clusters as their toleration ends, and their copies here stay until the replacements are healthy"}
	return v
}

func percent(share float64) string {
	return fmt.Sprintf("%g%%", math.Round(share*1000)/10)
}
