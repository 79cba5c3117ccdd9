package scheduler

import (
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// DefaultEvictionGrace is how long an evicted copy waits for its replacement to become healthy.
const DefaultEvictionGrace = 600 * time.Second

// Reasons of the eviction tasks the scheduler adds.
const (
	ReasonTaintUntolerated = "TaintUntolerated"
	ReasonPlacementChanged = "PlacementChanged"
)

// addEvictionTasks records every cluster the binding leaves, whether a NoExecute taint moves it away
// (evicted), its application failed there (appFailed) or the placement no longer selects the cluster (a
// policy edit, a label change, a spread or a fresh pass), so its copy stays until the new placement is
// healthy or the grace period passes: a move never leaves fewer copies running than the template asks for.
// The policy's purge mode decides (the application failover's for an application failure, the cluster
// failover's otherwise): Directly adds no task (the copy goes at once), Never adds one that only a person
// ends, Gracefully (the default) one that ends with the replacement's health. It returns the tasks it added.
func addEvictionTasks(spec *workv1alpha1.ResourceBindingSpec, targets []workv1alpha1.TargetCluster, evicted, appFailed map[string]string) []workv1alpha1.GracefulEvictionTask {
	clusterPurge := policyv1alpha1.PurgeGracefully
	if spec.Failover != nil && spec.Failover.Cluster != nil && spec.Failover.Cluster.PurgeMode != "" {
		clusterPurge = spec.Failover.Cluster.PurgeMode.Canonical()
	}
	now := metav1.Now()
	var added []workv1alpha1.GracefulEvictionTask
	for _, old := range spec.Clusters {
		if slices.ContainsFunc(targets, func(t workv1alpha1.TargetCluster) bool { return t.Name == old.Name }) ||
			slices.ContainsFunc(spec.GracefulEvictionTasks, func(t workv1alpha1.GracefulEvictionTask) bool { return t.FromCluster == old.Name }) {
			continue
		}
		purge, grace := clusterPurge, ptr.To(int32(DefaultEvictionGrace.Seconds()))
		reason, message := ReasonPlacementChanged, "the placement no longer selects the cluster"
		if why, ok := evicted[old.Name]; ok {
			// The taint filter's reasons are written for "N clusters have ...".
			reason, message = ReasonTaintUntolerated, "the cluster has "+strings.TrimPrefix(why, "have ")
		} else if why, ok := appFailed[old.Name]; ok {
			reason, message = ReasonApplicationFailure, why
			var appGrace *int32
			if purge, appGrace = applicationFailover(spec); appGrace != nil {
				grace = appGrace
			}
		}
		if purge == policyv1alpha1.PurgeDirectly {
			continue
		}
		task := workv1alpha1.GracefulEvictionTask{
			FromCluster: old.Name, PurgeMode: purge, Replicas: ptr.To(old.Replicas),
			Reason: reason, Message: message, Producer: "scheduler",
			GracePeriodSeconds: grace, CreationTimestamp: &now,
		}
		spec.GracefulEvictionTasks = append(spec.GracefulEvictionTasks, task)
		added = append(added, task)
	}
	return added
}

// finishEvictions drops the eviction tasks that are done: all of them but PurgeNever ones once the binding is Healthy at its
// current generation (the placement without the clusters being left runs well everywhere), and each one
// whose grace period has passed. Once a task is gone, the binding controller removes the copy it kept.
//
// A Healthy condition of an earlier generation says nothing about the current placement, so it finishes
// nothing.
func finishEvictions(tasks []workv1alpha1.GracefulEvictionTask, conditions []metav1.Condition, generation int64, now time.Time) []workv1alpha1.GracefulEvictionTask {
	healthy := healthyAt(conditions, generation)
	var remaining []workv1alpha1.GracefulEvictionTask
	for _, task := range tasks {
		if task.PurgeMode.Canonical() == policyv1alpha1.PurgeNever {
			remaining = append(remaining, task) // a person ends it
			continue
		}
		if d, ok := evictionDeadline(task); !healthy && (!ok || now.Before(d)) {
			remaining = append(remaining, task)
		}
	}
	return remaining
}

// evictionStatus says what ends each eviction task, as finishEvictions decides it: a person for purge mode
// Never; otherwise the binding turning Healthy, or the task's deadline (evictionDeadline) when it has one. A
// second task from the same cluster (a person's edit) gets no entry of its own.
func evictionStatus(tasks []workv1alpha1.GracefulEvictionTask) []workv1alpha1.EvictionStatus {
	var out []workv1alpha1.EvictionStatus
	for _, task := range tasks {
		if slices.ContainsFunc(out, func(s workv1alpha1.EvictionStatus) bool { return s.FromCluster == task.FromCluster }) {
			continue
		}
		s := workv1alpha1.EvictionStatus{FromCluster: task.FromCluster, EndedBy: workv1alpha1.EvictionEndReplacement}
		if task.PurgeMode.Canonical() == policyv1alpha1.PurgeNever {
			s.EndedBy = workv1alpha1.EvictionEndPerson
		} else if d, ok := evictionDeadline(task); ok {
			s.Deadline = ptr.To(metav1.NewTime(d).Rfc3339Copy())
		}
		out = append(out, s)
	}
	return out
}

// healthyAt reports whether the binding is Healthy at generation.
func healthyAt(conditions []metav1.Condition, generation int64) bool {
	c := meta.FindStatusCondition(conditions, workv1alpha1.ConditionHealthy)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == generation
}

// nextEvictionDeadline is how long until the first of the tasks runs out of time; 0 when none will.
func nextEvictionDeadline(tasks []workv1alpha1.GracefulEvictionTask, now time.Time) time.Duration {
	var wait time.Duration
	for _, task := range tasks {
		if task.PurgeMode.Canonical() == policyv1alpha1.PurgeNever {
			continue
		}
		if d, ok := evictionDeadline(task); ok && (wait == 0 || d.Sub(now) < wait) {
			wait = max(d.Sub(now), time.Millisecond)
		}
	}
	return wait
}

// evictionDeadline is when a task's grace period ends. A task without a creation time has none: it waits
// for health alone, never for a deadline it cannot know.
func evictionDeadline(task workv1alpha1.GracefulEvictionTask) (time.Time, bool) {
	if task.CreationTimestamp == nil {
		return time.Time{}, false
	}
	grace := DefaultEvictionGrace
	if task.GracePeriodSeconds != nil {
		grace = time.Duration(*task.GracePeriodSeconds) * time.Second
	}
	return task.CreationTimestamp.Add(grace), true
}
