package binding

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// aggregate writes the binding's per-cluster status and its FullyApplied and Healthy conditions, and sums
// the members' status into the template's for the kinds the interpreter knows.
func (r *Controller[T]) aggregate(ctx context.Context, b T, template *unstructured.Unstructured, works []workv1alpha1.Work) error {
	spec, status := b.BindingSpec(), b.BindingStatus()
	items := make([]workv1alpha1.AggregatedStatusItem, 0, len(spec.Clusters))
	var memberStatuses []map[string]any
	applied, healthy, caughtUp := len(spec.Clusters) > 0, len(spec.Clusters) > 0, len(spec.Clusters) > 0
	var notApplied, notHealthy []string
	for _, target := range spec.Clusters {
		item := workv1alpha1.AggregatedStatusItem{ClusterName: target.Name, Health: workv1alpha1.ResourceUnknown}
		if w := workOf(works, target.Name); w != nil && len(w.Status.ManifestStatuses) > 0 {
			ms := w.Status.ManifestStatuses[0]
			item.Applied, item.Health, item.Status = ms.Applied, ms.Health, summarize(ms.Status)
			if c := meta.FindStatusCondition(ms.Conditions, workv1alpha1.WorkConditionApplied); c != nil && c.Status != metav1.ConditionTrue {
				item.AppliedMessage = c.Message
			}
			if ms.Status != nil {
				m := map[string]any{}
				// utiljson keeps whole numbers int64, as the unstructured helpers expect.
				if utiljson.Unmarshal(ms.Status.Raw, &m) == nil {
					memberStatuses = append(memberStatuses, m)
				}
			}
			workApplied := meta.FindStatusCondition(w.Status.Conditions, workv1alpha1.WorkConditionApplied)
			caughtUp = caughtUp && ms.Applied && w.TemplateGeneration() == template.GetGeneration() &&
				workApplied != nil && workApplied.ObservedGeneration == w.Generation &&
				meta.IsStatusConditionTrue(ms.Conditions, workv1alpha1.ManifestConditionObserved)
		} else {
			caughtUp = false
		}
		if !item.Applied {
			applied = false
			notApplied = append(notApplied, target.Name)
		}
		if item.Health != workv1alpha1.ResourceHealthy {
			healthy = false
			notHealthy = append(notHealthy, target.Name)
		}
		items = append(items, item)
	}
	status.AggregatedStatus = items
	before := map[string]metav1.ConditionStatus{}
	for _, c := range status.Conditions {
		before[c.Type] = c.Status
	}
	meta.SetStatusCondition(&status.Conditions, condition(workv1alpha1.ConditionFullyApplied, applied, b.GetGeneration(),
		"Applied", "applied in every target cluster", "NotApplied", fmt.Sprintf("not applied yet in %v", notApplied)))
	meta.SetStatusCondition(&status.Conditions, condition(workv1alpha1.ConditionHealthy, healthy, b.GetGeneration(),
		"Healthy", "healthy in every target cluster", "NotHealthy", fmt.Sprintf("not healthy yet in %v", notHealthy)))

	current := r.New()
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(b), current); err != nil {
		return err
	}
	if !equality.Semantic.DeepEqual(current.BindingStatus(), status) {
		if err := r.Client.Status().Update(ctx, b); err != nil {
			return err
		}
		r.recordTransitions(template, before, status.Conditions)
	}
	return r.aggregateTemplate(ctx, template, memberStatuses, caughtUp)
}

// aggregateTemplate writes the summed member status into the template's status subresource.
func (r *Controller[T]) aggregateTemplate(ctx context.Context, template *unstructured.Unstructured, members []map[string]any, caughtUp bool) error {
	want := interpreter.AggregateStatus(template, members, caughtUp)
	if want == nil {
		return nil
	}
	if current, _, _ := unstructured.NestedMap(template.Object, "status"); equality.Semantic.DeepEqual(current, want) {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"status": want})
	if err != nil {
		return err
	}
	r.mu.Lock()
	written := r.templateStatus[template.GetUID()] == string(patch)
	r.mu.Unlock()
	if written {
		return nil // the cache is behind our last write
	}
	if err := r.Client.Status().Patch(ctx, template, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.templateStatus == nil {
		r.templateStatus = map[types.UID]string{}
	}
	r.templateStatus[template.GetUID()] = string(patch)
	return nil
}

// recordTransitions puts an event on the template when it becomes (or stops being) applied or healthy
// everywhere.
func (r *Controller[T]) recordTransitions(template *unstructured.Unstructured, before map[string]metav1.ConditionStatus, after []metav1.Condition) {
	if r.Recorder == nil {
		return
	}
	for _, c := range after {
		previous, known := before[c.Type]
		if c.Type == workv1alpha1.ConditionScheduled || previous == c.Status || !known && c.Status != metav1.ConditionTrue {
			continue // not a transition; a new binding not yet applied or healthy is no news
		}
		eventType := corev1.EventTypeNormal
		if c.Status != metav1.ConditionTrue {
			eventType = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(template, nil, eventType, c.Reason, c.Type, c.Message)
	}
}

// Bounds of the per-cluster status summary a binding keeps.
const (
	summaryMaxFields      = 32
	summaryMaxKeyLength   = 64
	summaryMaxValueLength = 256
)

// summarize keeps of a member object's status its top-level numbers, booleans and short strings (replica
// counts, observedGeneration, phase), at most summaryMaxFields of them in key order. The full status stays
// in the Work, where the agent reports it; copying it into the binding for every cluster would multiply
// what agents write into one object (a binding placed on many clusters could outgrow what etcd stores) and
// rewrite the binding whenever a condition's timestamp moves. Nil when nothing is left.
func summarize(status *runtime.RawExtension) *runtime.RawExtension {
	if status == nil {
		return nil
	}
	full := map[string]any{}
	if utiljson.Unmarshal(status.Raw, &full) != nil {
		return nil
	}
	keys := slices.Sorted(maps.Keys(full))
	summary := map[string]any{}
	for _, k := range keys {
		if len(summary) == summaryMaxFields {
			break
		}
		if len(k) > summaryMaxKeyLength {
			continue
		}
		switch v := full[k].(type) {
		case int64, float64, bool:
			summary[k] = v
		case string:
			if len(v) <= summaryMaxValueLength {
				summary[k] = v
			}
		}
	}
	if len(summary) == 0 {
		return nil
	}
	raw, err := json.Marshal(summary)
	if err != nil {
		return nil
	}
	return &runtime.RawExtension{Raw: raw}
}

func workOf(works []workv1alpha1.Work, cluster string) *workv1alpha1.Work {
	for i := range works {
		if works[i].Namespace == clusterv1alpha1.ClusterNamespace(cluster) {
			return &works[i]
		}
	}
	return nil
}

func condition(t string, ok bool, generation int64, okReason, okMessage, badReason, badMessage string) metav1.Condition {
	c := metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: okReason, Message: okMessage, ObservedGeneration: generation}
	if !ok {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, badReason, badMessage
	}
	return c
}
