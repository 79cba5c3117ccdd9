package addon

import (
	"k8s.io/apimachinery/pkg/api/meta"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// workApplied says whether the member applied the Work's current spec: its Applied condition is True for
// its generation and every manifest is reported applied.
func workApplied(w *workv1alpha1.Work) bool {
	if w == nil {
		return false
	}
	applied := meta.FindStatusCondition(w.Status.Conditions, workv1alpha1.WorkConditionApplied)
	if applied == nil || applied.Status != "True" || applied.ObservedGeneration != w.Generation ||
		len(w.Status.ManifestStatuses) < len(w.Spec.Workload.Manifests) {
		return false
	}
	for _, m := range w.Status.ManifestStatuses {
		if !m.Applied {
			return false
		}
	}
	return true
}

// workHealthy says whether the Work's current spec is applied and the interpreter finds nothing it
// installed unhealthy (kinds it has no health rule for count as healthy once applied).
func workHealthy(w *workv1alpha1.Work) (bool, string) {
	if !workApplied(w) {
		return false, "the add-on's Work is not applied yet"
	}
	for _, m := range w.Status.ManifestStatuses {
		if m.Health == workv1alpha1.ResourceUnhealthy {
			return false, m.Identifier.Kind + " " + m.Identifier.Name + " is not healthy in the cluster"
		}
	}
	return true, "everything the add-on installed is applied and healthy"
}
