package interpreter

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	appsv1alpha1 "github.com/flotilla-io/flotilla/api/apps/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

func TestReleaseStatusListsEachClustersChartVersion(t *testing.T) {
	hr := &unstructured.Unstructured{}
	hr.SetGroupVersionKind(appsv1alpha1.GroupVersion.WithKind("HelmRelease"))
	hr.SetGeneration(4)
	fleet := Fleet{
		Members: []Member{
			{Cluster: "m1", Status: map[string]any{"version": "2.0.0", "objects": int64(3), "appliedObjects": int64(3), "health": "Healthy"}},
			{Cluster: "m2", Status: map[string]any{"version": "1.0.0", "objects": int64(3), "appliedObjects": int64(2), "health": "Unknown"}},
			{Cluster: "m3"},
		},
		Applied:  metav1.Condition{Status: metav1.ConditionFalse, Reason: "NotApplied", Message: "not applied yet in m2, m3"},
		Rendered: &metav1.Condition{Type: appsv1alpha1.ConditionRendered, Status: metav1.ConditionFalse, Reason: "RenderFailed", Message: "m3: boom"},
		Now:      time.Now(),
	}
	status := AggregateStatus(hr, fleet)
	clusters := status["clusters"].([]any)
	want := []map[string]any{
		{"clusterName": "m1", "chartVersion": "2.0.0", "applied": true, "health": "Healthy", "objects": int64(3)},
		{"clusterName": "m2", "chartVersion": "1.0.0", "applied": false, "health": "Unknown", "objects": int64(3)},
		{"clusterName": "m3", "health": string(workv1alpha1.ResourceUnknown)},
	}
	for i, w := range want {
		got := clusters[i].(map[string]any)
		if len(got) != len(w) {
			t.Errorf("cluster %d: %v, want %v", i, got, w)
		}
		for k, v := range w {
			if got[k] != v {
				t.Errorf("cluster %d: %s = %v, want %v", i, k, got[k], v)
			}
		}
	}
	if _, ok := status["observedGeneration"]; ok {
		t.Error("observedGeneration set before the fleet caught up")
	}
	conditions := map[string]map[string]any{}
	for _, c := range status["conditions"].([]any) {
		conditions[c.(map[string]any)["type"].(string)] = c.(map[string]any)
	}
	if c := conditions[appsv1alpha1.ConditionRendered]; c == nil || c["status"] != "False" || c["message"] != "m3: boom" {
		t.Errorf("Rendered %v", c)
	}
	if c := conditions[workv1alpha1.TemplateConditionPropagated]; c == nil || c["status"] != "False" {
		t.Errorf("Propagated %v", c)
	}
}
