package execution

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func pendingPod(scheduled corev1.ConditionStatus, reason string, since time.Time) *corev1.Pod {
	return &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: scheduled, Reason: reason, LastTransitionTime: metav1.NewTime(since)}}}}
}

// TestCountUnschedulable: only pods the scheduler found no node for count, since the earliest of them.
func TestCountUnschedulable(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	if got := countUnschedulable([]*corev1.Pod{pendingPod(corev1.ConditionTrue, "", t0), pendingPod(corev1.ConditionFalse, "SchedulerError", t0)}); got != nil {
		t.Fatalf("scheduled and erroring pods counted: %+v", got)
	}
	got := countUnschedulable([]*corev1.Pod{
		pendingPod(corev1.ConditionFalse, corev1.PodReasonUnschedulable, t0.Add(time.Minute)),
		pendingPod(corev1.ConditionFalse, corev1.PodReasonUnschedulable, t0),
		pendingPod(corev1.ConditionTrue, "", t0.Add(-time.Hour)),
	})
	if got == nil || got.Replicas != 2 || !got.Since.Time.Equal(t0) {
		t.Fatalf("got %+v, want 2 since %s", got, t0)
	}
}

// TestWorkloadSelector: objects with replicas and a selector are workloads; others, and a selector that
// selects everything, are not.
func TestWorkloadSelector(t *testing.T) {
	obj := func(spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	}
	if s, ok := workloadSelector(obj(map[string]any{"replicas": int64(2), "selector": map[string]any{"matchLabels": map[string]any{"app": "web"}}})); !ok || s.String() != "app=web" {
		t.Fatalf("a Deployment-shaped object: %v %v", s, ok)
	}
	for name, spec := range map[string]map[string]any{
		"no replicas":          {"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}}},
		"no selector":          {"replicas": int64(2)},
		"selects everything":   {"replicas": int64(2), "selector": map[string]any{}},
		"not a label selector": {"replicas": int64(2), "selector": "app=web"},
	} {
		if _, ok := workloadSelector(obj(spec)); ok {
			t.Errorf("%s: taken for a workload", name)
		}
	}
}
