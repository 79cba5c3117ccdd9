package dashboard

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// TestRowState: a workload's state is the worst of scheduling and its clusters', and its chips carry each
// cluster's replicas, apply and health, and the clusters it is leaving.
func TestRowState(t *testing.T) {
	b := func(scheduled, healthy metav1.ConditionStatus, items ...workv1alpha1.AggregatedStatusItem) *workv1alpha1.ResourceBinding {
		rb := &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-deployment"},
			Spec: workv1alpha1.ResourceBindingSpec{Resource: workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"},
				Clusters:              []workv1alpha1.TargetCluster{{Name: "m1", Replicas: 2}, {Name: "m2", Replicas: 1}},
				GracefulEvictionTasks: []workv1alpha1.GracefulEvictionTask{{FromCluster: "m3", Replicas: ptr.To(int32(1))}}},
			Status: workv1alpha1.ResourceBindingStatus{AggregatedStatus: items, Conditions: []metav1.Condition{
				{Type: workv1alpha1.ConditionScheduled, Status: scheduled, Message: "0/3 clusters fit"},
				{Type: workv1alpha1.ConditionHealthy, Status: healthy}}}}
		return rb
	}
	ok := workv1alpha1.AggregatedStatusItem{ClusterName: "m1", Applied: true, Health: workv1alpha1.ResourceHealthy}
	sick := workv1alpha1.AggregatedStatusItem{ClusterName: "m2", Applied: true, Health: workv1alpha1.ResourceUnhealthy}
	tests := []struct {
		name string
		b    *workv1alpha1.ResourceBinding
		want string
	}{
		{"healthy", b(metav1.ConditionTrue, metav1.ConditionTrue, ok), stateHealthy},
		{"one cluster unhealthy", b(metav1.ConditionTrue, metav1.ConditionFalse, ok, sick), stateUnhealthy},
		{"unschedulable beats unhealthy", b(metav1.ConditionFalse, metav1.ConditionFalse, sick), stateUnschedulable},
		{"not yet reported", b(metav1.ConditionTrue, metav1.ConditionFalse), stateProgressing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			row := newRow(tt.b)
			if row.State != tt.want {
				t.Fatalf("state %s, want %s", row.State, tt.want)
			}
			if len(row.Chips) != 3 || row.Chips[0].Replicas != 2 || row.Chips[1].Replicas != 1 || !row.Chips[2].Leaving || row.BindingPath != "shop/web-deployment" {
				t.Fatalf("chips %+v, path %s", row.Chips, row.BindingPath)
			}
		})
	}
}

// TestDiffShowsOnlyWhatChanged: the diff of a template and the manifest sent leaves out what the hub sets on
// every object, and shows what an override or the replica division changed.
func TestDiffShowsOnlyWhatChanged(t *testing.T) {
	template := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "shop", "resourceVersion": "42", "uid": "u",
			"labels": map[string]any{"app": "web", "propagationpolicy.flotilla.io/name": "p"}},
		"spec":   map[string]any{"replicas": int64(3), "image": "nginx:1.27"},
		"status": map[string]any{"readyReplicas": int64(3)}}}
	same := template.DeepCopy()
	unstructured.RemoveNestedField(same.Object, "status")
	_ = unstructured.SetNestedStringMap(same.Object, map[string]string{"app": "web", "work.flotilla.io/managed-by": "x"}, "metadata", "labels")
	if d := diff(template, same); d != "" {
		t.Fatalf("a manifest that differs only in the hub's own fields shows a diff:\n%s", d)
	}
	changed := same.DeepCopy()
	_ = unstructured.SetNestedField(changed.Object, "registry.eu/nginx:1.27", "spec", "image")
	d := diff(template, changed)
	if !strings.Contains(d, "-  image: nginx:1.27") || !strings.Contains(d, "+  image: registry.eu/nginx:1.27") || strings.Contains(d, "-  replicas") || strings.Contains(d, "+  replicas") {
		t.Fatalf("diff:\n%s", d)
	}
}
