package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler"
)

// binding is a ResourceBinding or a ClusterResourceBinding, with its object metadata.
type binding interface {
	client.Object
	workv1alpha1.Object
}

// evictingColumn is the EVICTING column of flotilla get bindings: each cluster the binding is leaving, why,
// and for how long, for example "m1 (TaintUntolerated, 2m)".
func evictingColumn(tasks []workv1alpha1.GracefulEvictionTask, now time.Time) string {
	parts := make([]string, 0, len(tasks))
	for _, t := range tasks {
		parts = append(parts, fmt.Sprintf("%s (%s, %s)", t.FromCluster, t.Reason, since(t.CreationTimestamp, now)))
	}
	return orDash(strings.Join(parts, ", "))
}

// waitingForColumn is the WAITING-FOR column of flotilla get bindings -o wide: what ends each eviction task.
func waitingForColumn(b binding, now time.Time) string {
	var parts []string
	for _, t := range b.BindingSpec().GracefulEvictionTasks {
		parts = append(parts, t.FromCluster+": "+waitingFor(b, t, now))
	}
	return orDash(strings.Join(parts, "; "))
}

// waitingFor says what ends an eviction task, as the scheduler decides it: the replacement turning healthy or
// the grace period passing, or for purge mode Never a person removing the task. A task the scheduler drops on
// its next pass waits for nothing.
func waitingFor(b binding, task workv1alpha1.GracefulEvictionTask, now time.Time) string {
	if task.PurgeMode.Canonical() == policyv1alpha1.PurgeNever {
		return "a person: purgeMode Never keeps the copy until the task is removed from the binding"
	}
	deadline, hasDeadline := scheduler.EvictionDeadline(task)
	if scheduler.EvictionFinished(task, b.BindingStatus().Conditions, b.GetGeneration(), now) {
		if hasDeadline && !now.Before(deadline) {
			return "nothing: the grace period is over, the copy is being removed"
		}
		return "nothing: the replacement is healthy, the copy is being removed"
	}
	var targets []string
	for _, t := range b.BindingSpec().Clusters {
		targets = append(targets, t.Name)
	}
	s := "replacement healthy"
	if len(targets) > 0 {
		s += " on " + strings.Join(targets, ",")
	}
	if hasDeadline {
		s += " (or the grace period ends in " + duration.HumanDuration(deadline.Sub(now)) + ")"
	}
	return s
}

// printEvictions lists a binding's eviction tasks for flotilla status, and for each task only a person can
// end (purge mode Never) the command that ends it.
func printEvictions(out io.Writer, b binding, now time.Time) error {
	tasks := b.BindingSpec().GracefulEvictionTasks
	if len(tasks) == 0 {
		return nil
	}
	fmt.Fprintln(out, "Leaving (the copy stays until the eviction ends):")
	w := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
	fmt.Fprintln(w, "CLUSTER\tREASON\tSINCE\tPURGE\tWAITING FOR\tMESSAGE")
	for _, t := range tasks {
		purge := t.PurgeMode.Canonical()
		if purge == "" {
			purge = policyv1alpha1.PurgeGracefully
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", t.FromCluster, t.Reason, since(t.CreationTimestamp, now), purge,
			waitingFor(b, t, now), orDash(t.Message))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	for i, t := range tasks {
		if t.PurgeMode.Canonical() == policyv1alpha1.PurgeNever {
			fmt.Fprintf(out, "To end the eviction from %s (its copy there is then deleted):\n  %s\n", t.FromCluster, endEvictionCommand(b, i))
		}
	}
	return nil
}

// endEvictionCommand is the kubectl command that removes the i-th eviction task of a binding. The test
// operation makes it fail, rather than end another cluster's eviction, if the list changed in between.
func endEvictionCommand(b binding, i int) string {
	target := "crb " + b.GetName()
	if b.GetNamespace() != "" {
		target = "rb " + b.GetName() + " -n " + b.GetNamespace()
	}
	path := fmt.Sprintf("/spec/gracefulEvictionTasks/%d", i)
	return fmt.Sprintf(`kubectl patch %s --type=json -p '[{"op":"test","path":"%s/fromCluster","value":"%s"},{"op":"remove","path":"%s"}]'`,
		target, path, b.BindingSpec().GracefulEvictionTasks[i].FromCluster, path)
}

// since is how long ago t was, or - when it is not known.
func since(t *metav1.Time, now time.Time) string {
	if t == nil {
		return "-"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}
