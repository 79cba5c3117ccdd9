package binding

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/flotilla-io/flotilla/api/apps/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

func TestRenderedConditionWakesTheStatusController(t *testing.T) {
	ok := renderedCondition(2, nil)
	failed := renderedCondition(2, []string{"m2: no chart", "m1: template error"})
	if ok.Status != metav1.ConditionTrue || failed.Status != metav1.ConditionFalse || failed.Reason != "RenderFailed" ||
		failed.Message != "m2: no chart; m1: template error" {
		t.Fatalf("conditions %+v, %+v", ok, failed)
	}
	with := func(c ...metav1.Condition) *workv1alpha1.ResourceBinding {
		return &workv1alpha1.ResourceBinding{Status: workv1alpha1.ResourceBindingStatus{Conditions: c}}
	}
	other := metav1.Condition{Type: workv1alpha1.ConditionOverridden, Status: metav1.ConditionFalse}
	otherMessage := failed
	otherMessage.Message = "m1: another error"
	for _, tc := range []struct {
		name     string
		old, new *workv1alpha1.ResourceBinding
		want     bool
	}{
		{"first Rendered", with(), with(ok), true},
		{"Rendered lost", with(ok), with(failed), true},
		{"another failure", with(failed), with(otherMessage), true},
		{"unchanged", with(ok), with(ok, other), false},
		{"no Rendered at all", with(), with(other), false},
	} {
		if got := renderedChanged(tc.old, tc.new); got != tc.want {
			t.Errorf("%s: renderedChanged %v, want %v", tc.name, got, tc.want)
		}
	}
	if appsv1alpha1.ConditionRendered != ok.Type {
		t.Fatalf("type %s", ok.Type)
	}
}
