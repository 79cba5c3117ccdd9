package binding

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ownedConditions returns want with the transition times of the conditions in current kept where their
// status did not change, and reports whether current already says everything want says (then nothing needs
// to be written).
func ownedConditions(current []metav1.Condition, want ...metav1.Condition) ([]metav1.Condition, bool) {
	same := true
	out := make([]metav1.Condition, len(want))
	for i, c := range want {
		c.LastTransitionTime = metav1.Now()
		if old := meta.FindStatusCondition(current, c.Type); old != nil {
			if old.Status == c.Status {
				c.LastTransitionTime = old.LastTransitionTime
			}
			same = same && old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message &&
				old.ObservedGeneration == c.ObservedGeneration
		} else {
			same = false
		}
		out[i] = c
	}
	return out, same
}
