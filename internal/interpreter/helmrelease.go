package interpreter

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// releaseStatus is a HelmRelease's status over the fleet: for each target cluster the chart version its
// objects were rendered from, whether all were applied and their worst health (each member's report is its
// Work's objects folded, workv1alpha1.Work.TemplateStatus), the binding's Rendered condition and
// flotilla.io/Propagated; observedGeneration once every cluster applied and observed the release's current
// generation.
func releaseStatus(template *unstructured.Unstructured, fleet Fleet) map[string]any {
	status, _, _ := unstructured.NestedMap(template.Object, "status")
	if status == nil {
		status = map[string]any{}
	}
	clusters := make([]any, 0, len(fleet.Members))
	for _, m := range fleet.Members {
		entry := map[string]any{"clusterName": m.Cluster, "health": string(workv1alpha1.ResourceUnknown)}
		if m.Status != nil {
			objects, _, _ := unstructured.NestedInt64(m.Status, "objects")
			applied, _, _ := unstructured.NestedInt64(m.Status, "appliedObjects")
			if v, _, _ := unstructured.NestedString(m.Status, "version"); v != "" {
				entry["chartVersion"] = v
			}
			if h, _, _ := unstructured.NestedString(m.Status, "health"); h != "" {
				entry["health"] = h
			}
			entry["objects"] = objects
			entry["applied"] = objects > 0 && applied == objects
		}
		clusters = append(clusters, entry)
	}
	status["clusters"] = clusters
	if fleet.CaughtUp {
		status["observedGeneration"] = template.GetGeneration()
	}
	if r := fleet.Rendered; r != nil {
		setConditions(status, "", fleet.Now, condition{r.Type, string(r.Status), r.Reason, r.Message})
	}
	setConditions(status, "", fleet.Now, propagated(template, fleet))
	return status
}
