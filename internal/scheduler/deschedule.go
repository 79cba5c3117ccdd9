package scheduler

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// DefaultDescheduleAfter is how long replicas may stay unschedulable in a cluster before they move, unless
// the policy says otherwise (the hub's --deschedule-after).
const DefaultDescheduleAfter = 5 * time.Minute

// ReasonDescheduled is the event reason of replicas moved off a cluster whose scheduler found no node for them.
const ReasonDescheduled = "Descheduled"

// stuckReplicas returns, for a binding whose replicas are divided by capacity, how many replicas of each
// cluster have been unschedulable there (Pending, the member's scheduler finding no node) for longer than
// the policy's descheduleAfter (def when it says nothing; 0 never), and how long until the next cluster's
// unschedulable replicas reach it (0 when none will). Static weights and Duplicated placements never move:
// a person chose where their replicas run.
func stuckReplicas(spec *workv1alpha1.ResourceBindingSpec, status *workv1alpha1.ResourceBindingStatus, def time.Duration, now time.Time) (map[string]int32, time.Duration) {
	if !placedByCapacity(spec) {
		return nil, 0
	}
	after := def
	if d := spec.Placement.ReplicaScheduling.DescheduleAfter; d != nil {
		after = d.Duration
	}
	if after <= 0 {
		return nil, 0
	}
	stuck := map[string]int32{}
	var wait time.Duration
	for _, item := range status.AggregatedStatus {
		u := item.Unschedulable
		if u == nil || u.Replicas <= 0 {
			continue
		}
		i := slices.IndexFunc(spec.Clusters, func(t workv1alpha1.TargetCluster) bool { return t.Name == item.ClusterName })
		if i < 0 {
			continue
		}
		if deadline := u.Since.Add(after); now.Before(deadline) {
			if d := deadline.Sub(now); wait == 0 || d < wait {
				wait = d
			}
			continue
		}
		stuck[item.ClusterName] = min(u.Replicas, spec.Clusters[i].Replicas)
	}
	return stuck, wait
}

// withoutStuck is the placement with the stuck replicas taken off their clusters: what the scheduler adjusts
// from, so they go where there is room. A cluster left with none drops out. Unschedulable pods are never
// available, so taking them off never lowers what runs.
func withoutStuck(clusters []workv1alpha1.TargetCluster, stuck map[string]int32) []workv1alpha1.TargetCluster {
	var out []workv1alpha1.TargetCluster
	for _, t := range clusters {
		t.Replicas -= stuck[t.Name]
		if t.Replicas > 0 {
			out = append(out, t)
		}
	}
	return out
}

// deschedule places the binding as schedule does, with its stuck replicas taken off their clusters, which
// then have no room for them. When no placement takes them elsewhere, they stay: the binding is placed as it
// would be without them, and blocked says why. moved says whether the placement moved them.
func (r *Controller[T]) deschedule(f *Framework, spec *workv1alpha1.ResourceBindingSpec, status *workv1alpha1.ResourceBindingStatus,
	clusters []clusterv1alpha1.Cluster, records []workv1alpha1.FailoverRecord, failed map[string]string, stuck map[string]int32,
	now time.Time) (result Result, acted map[string]string, moved bool, blocked string, err error) {
	var why string
	if len(stuck) > 0 {
		trial := *spec
		trial.Clusters = withoutStuck(spec.Clusters, stuck)
		result, acted, blocked, err = r.schedule(f.WithoutRoomIn(stuck), &trial, status, clusters, records, failed, now)
		if _, placed := decide(spec.Clusters, result, err); placed {
			return result, acted, true, blocked, nil
		}
		why = "the placement chose no other cluster"
		if err != nil {
			why = err.Error()
		}
		why = fmt.Sprintf("replicas are unschedulable in %s, but no other cluster has room for them, so they stay: %s",
			clusterv1alpha1.ListInMessage(slices.Sorted(maps.Keys(stuck))), why)
	}
	result, acted, blocked, err = r.schedule(f, spec, status, clusters, records, failed, now)
	if why != "" {
		blocked = strings.TrimPrefix(blocked+"; "+why, "; ")
	}
	return result, acted, false, blocked, err
}

// descheduledMessage says what a placement that took stuck replicas off their clusters did with them.
func descheduledMessage(stuck map[string]int32, status *workv1alpha1.ResourceBindingStatus, placed []workv1alpha1.TargetCluster) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(stuck)) {
		since := ""
		for _, item := range status.AggregatedStatus {
			if item.ClusterName == name && item.Unschedulable != nil {
				since = " since " + item.Unschedulable.Since.UTC().Format(time.RFC3339)
			}
		}
		parts = append(parts, fmt.Sprintf("%d from %s (unschedulable there%s)", stuck[name], name, since))
	}
	var now []string
	for _, t := range placed {
		now = append(now, fmt.Sprintf("%s %d", t.Name, t.Replicas))
	}
	return fmt.Sprintf("moved %s; now %s", strings.Join(parts, ", "), clusterv1alpha1.ListInMessage(now))
}
