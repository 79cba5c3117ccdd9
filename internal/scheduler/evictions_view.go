package scheduler

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// EvictionDeadline is when an eviction task's grace period ends; false when it has none. The command line
// shows it, so a person reads the deadline the scheduler acts on.
func EvictionDeadline(task workv1alpha1.GracefulEvictionTask) (time.Time, bool) {
	return evictionDeadline(task)
}

// EvictionFinished reports whether the scheduler drops the task on its next pass over a binding of this
// generation and conditions: the replacement is healthy or the grace period is over (never for PurgeNever).
func EvictionFinished(task workv1alpha1.GracefulEvictionTask, conditions []metav1.Condition, generation int64, now time.Time) bool {
	return len(finishEvictions([]workv1alpha1.GracefulEvictionTask{task}, conditions, generation, now)) == 0
}
