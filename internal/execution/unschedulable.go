package execution

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// pendingPods follows a member's Pending pods, and only those (a field selector on status.phase), in an
// informer started when the first workload (an object with spec.replicas and spec.selector) is observed
// there: a workload's unschedulable replicas are counted from it without a list per observation.
type pendingPods struct {
	once   sync.Once
	synced cache.InformerSynced
	lister corev1listers.PodLister
}

// unschedulable counts the Pending pods of workload obj (those its spec.selector selects in its namespace)
// that the member's scheduler found no node for. Nil for an object that is no workload, when none are, and
// while the Pending pods are not listed yet (the next observation counts them).
func (m *Member) unschedulable(obj *unstructured.Unstructured) *workv1alpha1.UnschedulableReplicas {
	selector, ok := workloadSelector(obj)
	if !ok {
		return nil
	}
	p := &m.pending
	p.once.Do(func() {
		inf := informers.NewSharedInformerFactoryWithOptions(m.watchKube, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("status.phase", string(corev1.PodPending)).String()
		})).Core().V1().Pods()
		p.synced, p.lister = inf.Informer().HasSynced, inf.Lister()
		go inf.Informer().Run(m.stop)
	})
	if !p.synced() {
		return nil
	}
	pods, err := p.lister.Pods(obj.GetNamespace()).List(selector)
	if err != nil {
		return nil
	}
	return countUnschedulable(pods)
}

// workloadSelector is the label selector of an object with spec.replicas and spec.selector (Deployments,
// StatefulSets, ReplicaSets and workload CRDs shaped like them); false for anything else, and for a
// selector that selects everything.
func workloadSelector(obj *unstructured.Unstructured) (labels.Selector, bool) {
	if _, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "replicas"); !found {
		return nil, false
	}
	raw, found, _ := unstructured.NestedMap(obj.Object, "spec", "selector")
	if !found {
		return nil, false
	}
	ls := &metav1.LabelSelector{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, ls); err != nil {
		return nil, false
	}
	selector, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil || selector.Empty() {
		return nil, false
	}
	return selector, true
}

// countUnschedulable counts the pods whose PodScheduled condition is False for reason Unschedulable, since
// the earliest of their transitions; nil when none is.
func countUnschedulable(pods []*corev1.Pod) *workv1alpha1.UnschedulableReplicas {
	var out *workv1alpha1.UnschedulableReplicas
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodPending {
			continue
		}
		for _, c := range pod.Status.Conditions {
			if c.Type != corev1.PodScheduled || c.Status != corev1.ConditionFalse || c.Reason != corev1.PodReasonUnschedulable {
				continue
			}
			if out == nil {
				out = &workv1alpha1.UnschedulableReplicas{Since: c.LastTransitionTime}
			}
			out.Replicas++
			if c.LastTransitionTime.Before(&out.Since) {
				out.Since = c.LastTransitionTime
			}
		}
	}
	return out
}
