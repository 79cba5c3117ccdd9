package binding

import (
	"context"
	"encoding/json"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/internal/scheme"
)

// applyStatus writes status fields of a binding by server-side apply under manager. The applied object
// holds only the fields given, so each controller owns only its own: the conditions are a map-typed list
// keyed by type, and applying some condition types leaves the others (the scheduler's Scheduled, the other
// binding controller's) to their owners. A field this manager applied before and leaves out now is removed.
func applyStatus(ctx context.Context, c client.Client, b client.Object, manager string, status any) error {
	raw, err := json.Marshal(status)
	if err != nil {
		return err
	}
	fields := map[string]any{}
	if err := utiljson.Unmarshal(raw, &fields); err != nil {
		return err
	}
	u, err := scheme.ApplyObject(c, b, map[string]any{"status": fields})
	if err != nil {
		return err
	}
	return c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(manager), client.ForceOwnership)
}

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
