package binding

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

func TestOwnedConditions(t *testing.T) {
	earlier := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	current := []metav1.Condition{
		{Type: workv1alpha1.ConditionScheduled, Status: metav1.ConditionTrue, Reason: "Scheduled", LastTransitionTime: earlier},
		{Type: workv1alpha1.ConditionHealthy, Status: metav1.ConditionFalse, Reason: "NotHealthy", Message: "not healthy yet in a", ObservedGeneration: 2, LastTransitionTime: earlier},
	}
	healthy := metav1.Condition{Type: workv1alpha1.ConditionHealthy, Status: metav1.ConditionFalse, Reason: "NotHealthy", Message: "not healthy yet in a", ObservedGeneration: 2}
	got, same := ownedConditions(current, healthy)
	if !same || len(got) != 1 || !got[0].LastTransitionTime.Equal(&earlier) {
		t.Fatalf("an unchanged condition: same %v, %+v", same, got)
	}
	healthy.Message = "not healthy yet in a, b"
	if got, same = ownedConditions(current, healthy); same || !got[0].LastTransitionTime.Equal(&earlier) {
		t.Fatalf("a new message keeps the transition time but is written: same %v, %+v", same, got)
	}
	healthy.Status = metav1.ConditionTrue
	if got, same = ownedConditions(current, healthy); same || got[0].LastTransitionTime.Equal(&earlier) {
		t.Fatalf("a transition: same %v, %+v", same, got)
	}
	applied := metav1.Condition{Type: workv1alpha1.ConditionFullyApplied, Status: metav1.ConditionFalse}
	if got, same = ownedConditions(current, applied); same || len(got) != 1 || got[0].Type != workv1alpha1.ConditionFullyApplied {
		t.Fatalf("a new condition: same %v, %+v (only the owned ones are returned)", same, got)
	}
}
