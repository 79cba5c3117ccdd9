package inventory

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

func TestProfileChanged(t *testing.T) {
	base := func(m ...func(*clusterv1alpha1.Cluster)) *clusterv1alpha1.Cluster {
		return cluster(map[string]string{clusterv1alpha1.LabelClusterSet: "prod"}, append([]func(*clusterv1alpha1.Cluster){ready(metav1.ConditionTrue, "ClusterReady")}, m...)...)
	}
	tests := []struct {
		name string
		new  *clusterv1alpha1.Cluster
		want bool
	}{
		{name: "capacity and nodes", new: base(func(c *clusterv1alpha1.Cluster) {
			c.Status.NodeSummary = &clusterv1alpha1.NodeSummary{TotalNum: 3}
			c.Status.AgentVersion = "v2"
		}), want: false},
		{name: "another label", new: base(func(c *clusterv1alpha1.Cluster) { c.Labels["team"] = "a" }), want: false},
		{name: "set label", new: base(func(c *clusterv1alpha1.Cluster) { c.Labels[clusterv1alpha1.LabelClusterSet] = "dev" }), want: true},
		{name: "unhealthy", new: base(ready(metav1.ConditionFalse, "ClusterNotReady")), want: true},
		{name: "version", new: base(func(c *clusterv1alpha1.Cluster) { c.Status.KubernetesVersion = "v1.36.0" }), want: true},
		{name: "zones", new: base(func(c *clusterv1alpha1.Cluster) { c.Spec.Zones = []string{"a"} }), want: true},
		{name: "deleted", new: base(func(c *clusterv1alpha1.Cluster) { c.DeletionTimestamp = &metav1.Time{Time: time.Now()} }), want: true},
	}
	for _, tt := range tests {
		if got := profileChanged(event.UpdateEvent{ObjectOld: base(), ObjectNew: tt.new}); got != tt.want {
			t.Errorf("%s: profileChanged = %v, want %v", tt.name, got, tt.want)
		}
	}
}
