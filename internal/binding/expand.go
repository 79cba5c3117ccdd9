package binding

import (
	"context"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	appsv1alpha1 "github.com/flotilla-io/flotilla/api/apps/v1alpha1"
)

// Expander renders a template that stands for other objects (a HelmRelease for its chart's) into the objects
// a cluster gets in its place. The render controller calls it per cluster after the cluster's overrides
// changed the template (its rendered manifest), so a cluster's values are overridden like any field, and a
// rollout renders each cluster from the revision it is on. The hub wires the expanders in (a HelmRelease's is
// internal/helmrelease), which keeps what they link (the Helm SDK) out of this package.
type Expander interface {
	Expand(ctx context.Context, manifest *unstructured.Unstructured, cluster string) ([]*unstructured.Unstructured, error)
}

// expandRetry is when a binding whose template failed to expand on some cluster is rendered again: a chart
// repository that was down, or a ConfigMap created after the release, brings no event.
const expandRetry = time.Minute

// renderedCondition says whether the template expanded on every cluster; its message carries each failure.
func renderedCondition(generation int64, errs []string) metav1.Condition {
	c := metav1.Condition{Type: appsv1alpha1.ConditionRendered, Status: metav1.ConditionTrue, Reason: "Rendered",
		Message: "rendered for every target cluster", ObservedGeneration: generation}
	if len(errs) > 0 {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, "RenderFailed", truncate(strings.Join(errs, "; "))
	}
	return c
}
