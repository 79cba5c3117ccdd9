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

// moveTime is when bindings move, and the hub's default failover toleration when that is what sets the time
// (the binding's policy does not tolerate the health taint itself; 0 otherwise).
type moveTime struct {
	when              time.Time
	defaultToleration time.Duration
}

// movesFrom finds, in every binding, the workloads waiting to leave cluster cl, as the scheduler published
// them: the eviction tasks from the cluster (spec.gracefulEvictionTasks) and, for a binding still placed there
// while the cluster has a NoExecute taint, when it leaves (status.taintedClusters). A binding the scheduler
// has not looked at since the taint came is not listed yet.
func movesFrom(cl *clusterv1alpha1.Cluster, bindings []workv1alpha1.Binding, now time.Time) clusterMoves {
	moves := clusterMoves{at: map[moveTime][]string{}}
	noExecute := slices.ContainsFunc(cl.Spec.Taints, func(t corev1.Taint) bool { return t.Effect == corev1.TaintEffectNoExecute })
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
		tainted := b.BindingStatus().TaintedClusters
		i := slices.IndexFunc(tainted, func(t workv1alpha1.TaintedCluster) bool { return t.Cluster == cl.Name })
		switch {
		case i < 0:
		case tainted[i].LeavesAt == nil:
			moves.staying = append(moves.staying, name)
		case !now.Before(tainted[i].LeavesAt.Time):
			moves.now = append(moves.now, name)
		default:
			at := moveTime{when: tainted[i].LeavesAt.Time}
			if d := tainted[i].DefaultToleration; d != nil {
				at.defaultToleration = d.Duration
			}
			moves.at[at] = append(moves.at[at], name)
		}
	}
	return moves
}

// printFailover prints the cluster's Failover condition, what the health monitor did and why, and the
// workloads waiting to move away from the cluster.
func printFailover(w io.Writer, cl *clusterv1alpha1.Cluster, bindings []workv1alpha1.Binding, now time.Time) {
	if c := meta.FindStatusCondition(cl.Status.Conditions, clusterv1alpha1.ClusterConditionFailover); c != nil {
		// No tab: a sentence, not a row of the conditions table printed above it.
		fmt.Fprintf(w, "Failover: %s (%s, since %s) %s\n", c.Status, c.Reason, since(&c.LastTransitionTime, now), c.Message)
	}
	moves := movesFrom(cl, bindings, now)
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
		if at.defaultToleration > 0 {
			note = ", by the hub's default failover toleration of " + at.defaultToleration.String()
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
