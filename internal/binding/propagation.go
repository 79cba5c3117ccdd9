package binding

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/metrics"
)

// observePropagation tells the propagation metric which target clusters applied the template's current
// generation (the Work carries it and its Applied condition speaks of the Work's current generation), and
// which of those report it healthy.
func observePropagation(template *unstructured.Unstructured, items []workv1alpha1.AggregatedStatusItem, works []workv1alpha1.Work) {
	byCluster := worksByCluster(works)
	for _, item := range items {
		w := byCluster[item.ClusterName]
		if w == nil || !item.Applied || w.TemplateGeneration() != template.GetGeneration() {
			continue
		}
		if c := meta.FindStatusCondition(w.Status.Conditions, workv1alpha1.WorkConditionApplied); c == nil || c.ObservedGeneration != w.Generation {
			continue
		}
		metrics.Propagation.Reached(template.GetUID(), template.GetGeneration(), item.ClusterName, metrics.StageApplied)
		if item.Health == workv1alpha1.ResourceHealthy {
			metrics.Propagation.Reached(template.GetUID(), template.GetGeneration(), item.ClusterName, metrics.StageHealthy)
		}
	}
}
