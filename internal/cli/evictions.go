package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

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
func waitingForColumn(b workv1alpha1.Binding, now time.Time) string {
	var parts []string
	for _, t := range b.BindingSpec().GracefulEvictionTasks {
		parts = append(parts, t.FromCluster+": "+waitingFor(b, t, now))
	}
	return orDash(strings.Join(parts, "; "))
}

// waitingFor says what ends an eviction task, as the scheduler published it (status.evictions): a person for
// purge mode Never; otherwise the replacement turning healthy, that is the binding Healthy at its current
// generation, or the grace period ending. A task that one of them already ended waits for nothing: the
// scheduler drops it on its next pass.
func waitingFor(b workv1alpha1.Binding, task workv1alpha1.GracefulEvictionTask, now time.Time) string {
	status := b.BindingStatus()
	i := slices.IndexFunc(status.Evictions, func(s workv1alpha1.EvictionStatus) bool { return s.FromCluster == task.FromCluster })
	if i < 0 {
		return "unknown: the scheduler has not published it yet"
	}
	published := status.Evictions[i]
	if published.EndedBy == workv1alpha1.EvictionEndPerson {
		return "a person: purgeMode Never keeps the copy until the task is removed from the binding"
	}
	deadline := published.Deadline
	if deadline != nil && !now.Before(deadline.Time) {
		return "nothing: the grace period is over, the copy is being removed"
	}
	if c := meta.FindStatusCondition(status.Conditions, workv1alpha1.ConditionHealthy); c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == b.GetGeneration() {
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
	if deadline != nil {
		s += " (or the grace period ends in " + duration.HumanDuration(deadline.Sub(now)) + ")"
	}
	return s
}

// printEvictions lists a binding's eviction tasks for flotilla status, and for each task only a person can
// end (purge mode Never) the command that ends it.
func printEvictions(out io.Writer, b workv1alpha1.Binding, now time.Time) error {
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
func endEvictionCommand(b workv1alpha1.Binding, i int) string {
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
