package cli

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/duration"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler"
)

// printTaints lists a cluster's taints with their effect and age, and says which ones the hub's health
// monitor sets (it also removes them when the cluster recovers).
func printTaints(w io.Writer, taints []corev1.Taint, now time.Time) {
	if len(taints) == 0 {
		fmt.Fprintln(w, "Taints:\t-")
		return
	}
	fmt.Fprintln(w, "Taints:\n  TAINT\tEFFECT\tAGE\tSET BY")
	for _, t := range taints {
		key := t.Key
		if t.Value != "" {
			key += "=" + t.Value
		}
		by := "-"
		if t.Key == clusterv1alpha1.TaintClusterUnreachable || t.Key == clusterv1alpha1.TaintClusterNotReady {
			by = "health monitor"
		}
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", key, t.Effect, since(t.TimeAdded, now), by)
	}
}

// clusterMoves are the workloads waiting to leave one cluster.
type clusterMoves struct {
	// replacing are the bindings that left the cluster and keep their copy there (an eviction task) until
	// their replacement is healthy.
	replacing []string
	// at are the bindings still placed on the cluster that tolerate its NoExecute taints for a time, by
	// when they move.
	at map[moveTime][]string
	// now are the bindings still placed on the cluster with a NoExecute taint they do not tolerate (any
	// more): the scheduler moves them on its next pass, or keeps them where they are while nothing else fits.
	now []string
	// staying are the bindings placed on the cluster that tolerate its NoExecute taints without a time limit.
	staying []string
}

// moveTime is when bindings move, and whether that time comes from the hub's default failover toleration
// (the binding's policy does not tolerate the health taint itself), which the command line can only assume.
type moveTime struct {
	when      time.Time
	byDefault bool
}

// movesFrom finds, in every binding, the workloads waiting to leave cluster cl. Whether and when a binding
// placed there moves is the scheduler's own reading of its tolerations, with failoverAfter as the hub's
// default failover toleration, so what is shown is what the scheduler will do.
func movesFrom(cl *clusterv1alpha1.Cluster, bindings []binding, failoverAfter time.Duration, now time.Time) clusterMoves {
	moves := clusterMoves{at: map[moveTime][]string{}}
	noExecute := slices.ContainsFunc(cl.Spec.Taints, func(t corev1.Taint) bool { return t.Effect == corev1.TaintEffectNoExecute })
	taints := scheduler.TaintToleration{FailoverAfter: failoverAfter}
	// Asked with a default an hour longer, the scheduler gives another time exactly when the default decides.
	longer := scheduler.TaintToleration{FailoverAfter: failoverAfter + time.Hour}
	clusters := []clusterv1alpha1.Cluster{*cl}
	for _, b := range bindings {
		spec, name := b.BindingSpec(), b.GetName()
		if b.GetNamespace() != "" {
			name = b.GetNamespace() + "/" + name
		}
		if slices.ContainsFunc(spec.GracefulEvictionTasks, func(t workv1alpha1.GracefulEvictionTask) bool { return t.FromCluster == cl.Name }) {
			moves.replacing = append(moves.replacing, name)
		}
		if !noExecute || !slices.ContainsFunc(spec.Clusters, func(t workv1alpha1.TargetCluster) bool { return t.Name == cl.Name }) {
			continue
		}
		if taints.Filter(spec, cl) != "" {
			moves.now = append(moves.now, name)
		} else if d, ok := taints.NextExpiry(spec, clusters, now); ok {
			other, _ := longer.NextExpiry(spec, clusters, now)
			at := moveTime{when: now.Add(d).Round(0), byDefault: other != d} // Round(0): no monotonic reading, equal times are one key
			moves.at[at] = append(moves.at[at], name)
		} else {
			moves.staying = append(moves.staying, name)
		}
	}
	return moves
}

// printFailover prints the cluster's Failover condition, what the health monitor did and why, and the
// workloads waiting to move away from the cluster.
func printFailover(w io.Writer, cl *clusterv1alpha1.Cluster, bindings []binding, failoverAfter time.Duration, now time.Time) {
	if c := meta.FindStatusCondition(cl.Status.Conditions, clusterv1alpha1.ClusterConditionFailover); c != nil {
		// No tab: a sentence, not a row of the conditions table printed above it.
		fmt.Fprintf(w, "Failover: %s (%s, since %s) %s\n", c.Status, c.Reason, since(&c.LastTransitionTime, now), c.Message)
	}
	moves := movesFrom(cl, bindings, failoverAfter, now)
	if len(moves.replacing) == 0 && len(moves.at) == 0 && len(moves.now) == 0 && len(moves.staying) == 0 {
		fmt.Fprintln(w, "Waiting to move:\tnone")
		return
	}
	fmt.Fprintln(w, "Waiting to move:")
	if n := len(moves.replacing); n > 0 {
		fmt.Fprintf(w, "  %d waiting for their replacement (left the cluster, copy kept):\t%s\n", n, someNames(moves.replacing))
	}
	if n := len(moves.now); n > 0 {
		fmt.Fprintf(w, "  %d moving now (a NoExecute taint not tolerated, or no longer; they stay while nothing else fits):\t%s\n", n, someNames(moves.now))
	}
	for _, at := range slices.SortedFunc(maps.Keys(moves.at), func(a, b moveTime) int { return a.when.Compare(b.when) }) {
		names := moves.at[at]
		note := ""
		if at.byDefault {
			note = ", by the hub's default failover toleration of " + failoverAfter.String()
		}
		fmt.Fprintf(w, "  %d will move at %s (in %s%s):\t%s\n", len(names), at.when.Local().Format(time.TimeOnly),
			duration.HumanDuration(at.when.Sub(now)), note, someNames(names))
	}
	if n := len(moves.staying); n > 0 {
		fmt.Fprintf(w, "  %d staying (tolerate the NoExecute taints without a time limit):\t%s\n", n, someNames(moves.staying))
	}
}

// someNames lists up to five names and counts the rest: a fleet can have thousands of bindings on a cluster.
func someNames(names []string) string {
	const shown = 5
	if len(names) <= shown {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:shown], ", "), len(names)-shown)
}
