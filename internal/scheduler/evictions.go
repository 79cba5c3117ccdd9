package scheduler

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// DefaultEvictionGrace is how long an evicted copy waits for its replacement to become healthy.
const DefaultEvictionGrace = 600 * time.Second

// addEvictionTasks records the clusters a NoExecute taint moves the binding away from, so their copies stay
// until the new placement is healthy (or the grace period passes).
func addEvictionTasks(spec *workv1alpha1.ResourceBindingSpec, targets []workv1alpha1.TargetCluster, evicted map[string]string) {
	now := metav1.Now()
	for _, old := range spec.Clusters {
		reason, ok := evicted[old.Name]
		if !ok || slices.ContainsFunc(targets, func(t workv1alpha1.TargetCluster) bool { return t.Name == old.Name }) ||
			slices.ContainsFunc(spec.GracefulEvictionTasks, func(t workv1alpha1.GracefulEvictionTask) bool { return t.FromCluster == old.Name }) {
			continue
		}
		spec.GracefulEvictionTasks = append(spec.GracefulEvictionTasks, workv1alpha1.GracefulEvictionTask{
			FromCluster: old.Name, PurgeMode: policyv1alpha1.PurgeGracefully, Replicas: ptr.To(old.Replicas),
			Reason: "TaintUntolerated", Message: "the cluster " + reason, Producer: "scheduler",
			GracePeriodSeconds: ptr.To(int32(DefaultEvictionGrace.Seconds())), CreationTimestamp: &now,
		})
	}
}

// finishEvictions drops the eviction tasks that are done: all of them once the binding is Healthy at its
// current generation (the placement without the clusters being left runs well everywhere), and each one
// whose grace period has passed. Once a task is gone, the binding controller removes the copy it kept.
//
// A Healthy condition of an earlier generation says nothing about the current placement, so it finishes
// nothing.
func finishEvictions(tasks []workv1alpha1.GracefulEvictionTask, conditions []metav1.Condition, generation int64, now time.Time) []workv1alpha1.GracefulEvictionTask {
	if c := meta.FindStatusCondition(conditions, workv1alpha1.ConditionHealthy); c != nil &&
		c.Status == metav1.ConditionTrue && c.ObservedGeneration == generation {
		return nil
	}
	var remaining []workv1alpha1.GracefulEvictionTask
	for _, task := range tasks {
		if d, ok := evictionDeadline(task); !ok || now.Before(d) {
			remaining = append(remaining, task)
		}
	}
	return remaining
}

// nextEvictionDeadline is how long until the first of the tasks runs out of time; 0 when none will.
func nextEvictionDeadline(tasks []workv1alpha1.GracefulEvictionTask, now time.Time) time.Duration {
	var wait time.Duration
	for _, task := range tasks {
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
