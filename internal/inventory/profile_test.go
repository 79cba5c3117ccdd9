package inventory

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	inventoryv1alpha1 "github.com/flotilla-io/flotilla/api/inventory/v1alpha1"
)

func cluster(labels map[string]string, mutate ...func(*clusterv1alpha1.Cluster)) *clusterv1alpha1.Cluster {
	c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1", UID: types.UID("uid-1"), Labels: labels,
		CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))}}
	for _, m := range mutate {
		m(c)
	}
	return c
}

func ready(status metav1.ConditionStatus, reason string) func(*clusterv1alpha1.Cluster) {
	return func(c *clusterv1alpha1.Cluster) {
		meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: clusterv1alpha1.ClusterConditionReady, Status: status, Reason: reason, Message: reason})
	}
}

func TestNamespaceOf(t *testing.T) {
	tests := []struct {
		labels  map[string]string
		want    string
		wantErr string
	}{
		{labels: nil, want: "flotilla-clusterset-default"},
		{labels: map[string]string{clusterv1alpha1.LabelClusterSet: ""}, want: "flotilla-clusterset-default"},
		{labels: map[string]string{clusterv1alpha1.LabelClusterSet: "prod"}, want: "flotilla-clusterset-prod"},
		{labels: map[string]string{clusterv1alpha1.LabelClusterSet: "pci.eu"}, wantErr: `ClusterSet "pci.eu" makes no valid namespace name`},
		{labels: map[string]string{clusterv1alpha1.LabelClusterSet: strings.Repeat("a", 44)}, wantErr: "makes no valid namespace name"},
	}
	for _, tt := range tests {
		got, err := NamespaceOf(cluster(tt.labels))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("NamespaceOf(%v) = %q, %v; want error %q", tt.labels, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("NamespaceOf(%v) = %q, %v; want %q", tt.labels, got, err, tt.want)
		}
	}
}

func TestDesired(t *testing.T) {
	c := cluster(map[string]string{clusterv1alpha1.LabelClusterSet: "prod"}, ready(metav1.ConditionFalse, "ClusterNotReady"), func(c *clusterv1alpha1.Cluster) {
		c.Spec.Region, c.Spec.Zones, c.Status.KubernetesVersion = "eu-west-1", []string{"eu-west-1a", "eu-west-1b"}, "v1.35.0"
	})
	p := Desired(c, "flotilla-clusterset-prod")
	if p.Namespace != "flotilla-clusterset-prod" || p.Name != "member1" || p.Spec.ClusterManager.Name != "flotilla" || p.Spec.DisplayName != "member1" {
		t.Fatalf("profile %s/%s, spec %+v", p.Namespace, p.Name, p.Spec)
	}
	for k, v := range map[string]string{"x-k8s.io/cluster-manager": "flotilla", "clusterset.multicluster.x-k8s.io": "prod", "cluster.flotilla.io/clusterset": "prod"} {
		if p.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, p.Labels[k], v)
		}
	}
	if o := p.OwnerReferences; len(o) != 1 || o[0].UID != "uid-1" || o[0].Kind != "Cluster" || o[0].Controller == nil || !*o[0].Controller {
		t.Errorf("owner references %+v, want the Cluster as controller", o)
	}
	// No provider: no property for it; properties sorted by name.
	var props []string
	for _, pr := range p.Status.Properties {
		props = append(props, pr.Name+"="+pr.Value)
	}
	if got, want := strings.Join(props, " "), "clusterset.k8s.io=prod topology.kubernetes.io/region=eu-west-1 topology.kubernetes.io/zone=eu-west-1a,eu-west-1b"; got != want {
		t.Errorf("properties %s, want %s", got, want)
	}
	if p.Status.Version.Kubernetes != "v1.35.0" {
		t.Errorf("version %q", p.Status.Version.Kubernetes)
	}
	if h := meta.FindStatusCondition(p.Status.Conditions, "ControlPlaneHealthy"); h == nil || h.Status != metav1.ConditionFalse || h.Reason != "ClusterNotReady" {
		t.Errorf("ControlPlaneHealthy %+v, want False from Ready", h)
	}
	if j := meta.FindStatusCondition(p.Status.Conditions, "Joined"); j == nil || j.Status != metav1.ConditionTrue {
		t.Errorf("Joined %+v, want True", j)
	}

	unreported := Desired(cluster(nil), "flotilla-clusterset-default")
	if h := meta.FindStatusCondition(unreported.Status.Conditions, "ControlPlaneHealthy"); h.Status != metav1.ConditionUnknown || h.Reason != ReasonNotReported || h.LastTransitionTime.IsZero() {
		t.Errorf("ControlPlaneHealthy of a cluster without Ready: %+v, want Unknown NotReported with a transition time", h)
	}
	deleting := Desired(cluster(nil, func(c *clusterv1alpha1.Cluster) { c.DeletionTimestamp = &metav1.Time{Time: time.Now()} }), "ns")
	if j := meta.FindStatusCondition(deleting.Status.Conditions, "Joined"); j.Status != metav1.ConditionFalse || j.Reason != ReasonDeregistering {
		t.Errorf("Joined of a deleted cluster: %+v, want False Deregistering", j)
	}
}

func TestUpToDate(t *testing.T) {
	base := cluster(map[string]string{clusterv1alpha1.LabelClusterSet: "prod"}, ready(metav1.ConditionTrue, "ClusterReady"))
	desired := Desired(base, "ns")
	tests := []struct {
		name           string
		change         func(*inventoryv1alpha1.ClusterProfile)
		object, status bool
	}{
		{name: "same", change: func(*inventoryv1alpha1.ClusterProfile) {}, object: true, status: true},
		{name: "another label and owner too", change: func(p *inventoryv1alpha1.ClusterProfile) {
			p.Labels["team"] = "a"
			p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{UID: "other"})
		}, object: true, status: true},
		{name: "only a transition time", change: func(p *inventoryv1alpha1.ClusterProfile) {
			p.Status.Conditions[0].LastTransitionTime = metav1.Now()
		}, object: true, status: true},
		{name: "set label edited", change: func(p *inventoryv1alpha1.ClusterProfile) { p.Labels[clusterv1alpha1.LabelClusterSet] = "dev" }, status: true},
		{name: "owner of an earlier Cluster of that name", change: func(p *inventoryv1alpha1.ClusterProfile) { p.OwnerReferences[0].UID = "uid-0" }, status: true},
		{name: "display name edited", change: func(p *inventoryv1alpha1.ClusterProfile) { p.Spec.DisplayName = "x" }, status: true},
		{name: "healthy flipped", change: func(p *inventoryv1alpha1.ClusterProfile) { p.Status.Conditions[0].Status = metav1.ConditionFalse }, object: true},
		{name: "property changed", change: func(p *inventoryv1alpha1.ClusterProfile) { p.Status.Properties[0].Value = "dev" }, object: true},
		{name: "condition missing", change: func(p *inventoryv1alpha1.ClusterProfile) { p.Status.Conditions = p.Status.Conditions[:1] }, object: true},
		{name: "version changed", change: func(p *inventoryv1alpha1.ClusterProfile) { p.Status.Version.Kubernetes = "v1.34.0" }, object: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			current := Desired(base, "ns")
			tt.change(current)
			if got := ObjectUpToDate(current, desired); got != tt.object {
				t.Errorf("ObjectUpToDate = %v, want %v", got, tt.object)
			}
			if got := StatusUpToDate(current, desired); got != tt.status {
				t.Errorf("StatusUpToDate = %v, want %v", got, tt.status)
			}
		})
	}
}
