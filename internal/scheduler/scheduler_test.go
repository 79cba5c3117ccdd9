package scheduler

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

func cluster(name, region string, taints ...corev1.Taint) clusterv1alpha1.Cluster {
	return clusterv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"region": region}},
		Spec:       clusterv1alpha1.ClusterSpec{Region: region, Taints: taints},
		Status: clusterv1alpha1.ClusterStatus{
			Conditions: []metav1.Condition{{Type: clusterv1alpha1.ClusterConditionAPIsComplete, Status: metav1.ConditionTrue}},
			APIEnablements: []clusterv1alpha1.APIEnablement{
				{GroupVersion: "apps/v1", Resources: []clusterv1alpha1.APIResource{{Name: "deployments", Kind: "Deployment"}}},
			}},
	}
}

// withoutDeployments is c with an API list that lacks Deployments: complete (the member really does not
// serve them), incomplete (discovery failed for apps/v1), or missing (never reported since the hub started).
func withoutDeployments(c clusterv1alpha1.Cluster, list string) clusterv1alpha1.Cluster {
	c.Status.APIEnablements = []clusterv1alpha1.APIEnablement{{GroupVersion: "v1", Resources: []clusterv1alpha1.APIResource{{Name: "pods", Kind: "Pod"}}}}
	switch list {
	case "incomplete":
		c.Status.Conditions[0].Status = metav1.ConditionFalse
	case "missing":
		c.Status = clusterv1alpha1.ClusterStatus{}
	}
	return c
}

func deployment(replicas int32, placement *policyv1alpha1.Placement, current ...workv1alpha1.TargetCluster) *workv1alpha1.ResourceBindingSpec {
	return &workv1alpha1.ResourceBindingSpec{
		Resource: workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
		Replicas: replicas, Placement: placement, Clusters: current,
	}
}

func divided(weights ...policyv1alpha1.StaticClusterWeight) *policyv1alpha1.Placement {
	return &policyv1alpha1.Placement{ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
		ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingDivided,
		WeightPreference:      &policyv1alpha1.ClusterPreferences{StaticWeightList: weights},
	}}
}

func weight(name string, w int64) policyv1alpha1.StaticClusterWeight {
	return policyv1alpha1.StaticClusterWeight{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{name}}, Weight: w}
}

func result(t []workv1alpha1.TargetCluster) string {
	var parts []string
	for _, c := range t {
		parts = append(parts, c.Name+"="+string(rune('0'+c.Replicas)))
	}
	return strings.Join(parts, ",")
}

func TestSchedule(t *testing.T) {
	unreachable := corev1.Taint{Key: clusterv1alpha1.TaintClusterUnreachable, Effect: corev1.TaintEffectNoSchedule}
	three := []clusterv1alpha1.Cluster{cluster("c", "us"), cluster("a", "eu"), cluster("b", "eu")}
	tests := []struct {
		name     string
		binding  *workv1alpha1.ResourceBindingSpec
		clusters []clusterv1alpha1.Cluster
		want     string
		wantErr  string
	}{
		{"duplicated by default", deployment(3, nil), three, "a=3,b=3,c=3", ""},
		{"cluster names", deployment(3, &policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"a", "c"}}}), three, "a=3,c=3", ""},
		{"field selector and exclude", deployment(1, &policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{
			FieldSelector:   &policyv1alpha1.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "region", Operator: corev1.NodeSelectorOpIn, Values: []string{"eu"}}}},
			ExcludeClusters: []string{"b"}}}), three, "a=1", ""},
		{"divided 2:1", deployment(3, divided(weight("a", 2), weight("b", 1))), three, "a=2,b=1", ""},
		{"divided 2:1 of 4, remainder to the larger fraction", deployment(4, divided(weight("a", 2), weight("b", 1))), three, "a=3,b=1", ""},
		{"divided equally without weights", deployment(5, divided()), three, "a=2,b=2,c=1", ""},
		{"divided 1 replica over 3: one cluster", deployment(1, divided()), three, "a=1", ""},
		{"a new placement avoids a tainted cluster", deployment(2, nil), []clusterv1alpha1.Cluster{cluster("a", "eu", unreachable), cluster("b", "eu")}, "b=2", ""},
		{"an existing placement survives a taint", deployment(2, nil, workv1alpha1.TargetCluster{Name: "a", Replicas: 2}),
			[]clusterv1alpha1.Cluster{cluster("a", "eu", unreachable), cluster("b", "eu")}, "a=2,b=2", ""},
		{"tolerated taint", deployment(2, &policyv1alpha1.Placement{ClusterTolerations: []corev1.Toleration{{Key: unreachable.Key, Operator: corev1.TolerationOpExists}}}),
			[]clusterv1alpha1.Cluster{cluster("a", "eu", unreachable)}, "a=2", ""},
		{"kind not served", &workv1alpha1.ResourceBindingSpec{Resource: workv1alpha1.ObjectReference{APIVersion: "example.com/v1", Kind: "Widget"}}, three, "",
			"0/3 clusters fit: 3 do not serve example.com/v1/Widget (a, b, c)"},
		{"nothing fits", deployment(1, &policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"z"}}}), three, "",
			"0/3 clusters fit: 3 do not match the cluster affinity (a, b, c)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Default().Schedule(tt.binding, tt.clusters, "")
			got := res.Clusters
			if tt.wantErr != "" {
				var nofit *NoFitError
				if !errors.As(err, &nofit) || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if result(got) != tt.want {
				t.Fatalf("got %s, want %s", result(got), tt.want)
			}
		})
	}
}

// TestNoPlacementIsLost: what used to turn a placement into nothing, and so delete every member's copy,
// now falls back, keeps the placement with a reason, or keeps a cluster whose API list says nothing.
func TestNoPlacementIsLost(t *testing.T) {
	three := []clusterv1alpha1.Cluster{cluster("a", "eu"), cluster("b", "eu"), cluster("c", "us")}
	byLabel := func(key, value string, w int64) policyv1alpha1.StaticClusterWeight {
		return policyv1alpha1.StaticClusterWeight{Weight: w, TargetCluster: policyv1alpha1.ClusterAffinity{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{key: value}}}}
	}
	on := func(names ...string) []workv1alpha1.TargetCluster {
		out := make([]workv1alpha1.TargetCluster, len(names))
		for i, n := range names {
			out[i] = workv1alpha1.TargetCluster{Name: n, Replicas: 1}
		}
		return out
	}
	tests := []struct {
		name     string
		binding  *workv1alpha1.ResourceBindingSpec
		clusters []clusterv1alpha1.Cluster
		want     string
		wantNote string
		wantErr  string
	}{
		{name: "static weights keyed by a label no cluster carries: equal weights",
			binding: deployment(3, divided(byLabel("tier", "gold", 2), byLabel("tier", "silver", 1)), on("a", "b", "c")...), clusters: three,
			want: "a=1,b=1,c=1", wantNote: "no staticWeightList entry selects a feasible cluster, so the replicas are divided equally"},
		{name: "static weights naming clusters that left: equal weights over those that remain",
			binding: deployment(4, divided(weight("x", 1), weight("y", 3))), clusters: three, want: "a=2,b=1,c=1", wantNote: "divided equally"},
		{name: "static weights that select some clusters keep their meaning",
			binding: deployment(3, divided(byLabel("region", "eu", 1))), clusters: three, want: "a=2,b=1"},
		{name: "a complete API list without the kind moves the binding away",
			binding: deployment(1, nil, on("a")...), clusters: []clusterv1alpha1.Cluster{withoutDeployments(cluster("a", "eu"), "complete"), cluster("b", "eu")},
			want: "b=1"},
		{name: "an incomplete API list keeps the placement",
			binding: deployment(1, nil, on("a")...), clusters: []clusterv1alpha1.Cluster{withoutDeployments(cluster("a", "eu"), "incomplete"), cluster("b", "eu")},
			want: "a=1,b=1"},
		{name: "a missing API list (hub restored without Cluster status) keeps the placement",
			binding: deployment(1, nil, on("a", "b")...), clusters: []clusterv1alpha1.Cluster{withoutDeployments(cluster("a", "eu"), "missing"), withoutDeployments(cluster("b", "eu"), "missing"), cluster("c", "us")},
			want: "a=1,b=1,c=1"},
		{name: "an incomplete API list without the kind takes no new placement",
			binding: deployment(1, nil), clusters: []clusterv1alpha1.Cluster{withoutDeployments(cluster("a", "eu"), "incomplete")},
			wantErr: "0/1 clusters fit: 1 have not reported apps/v1/Deployment in an incomplete API list (a)"},
		{name: "spread by a label no cluster carries is a NoFit",
			binding:  deployment(2, &policyv1alpha1.Placement{SpreadConstraints: []policyv1alpha1.SpreadConstraint{{SpreadByLabel: "tier", MaxGroups: 2}}}, on("a", "b")...),
			clusters: three, wantErr: "spread by label tier: no feasible cluster has a value for it"},
		{name: "spread by a field no cluster has is a NoFit",
			binding:  deployment(2, &policyv1alpha1.Placement{SpreadConstraints: []policyv1alpha1.SpreadConstraint{{SpreadByField: "cluster", MaxGroups: 2}, {SpreadByField: "zone", MaxGroups: 2}}}, on("a")...),
			clusters: three, wantErr: "spread by zone: no feasible cluster has a value for it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Default().Schedule(tt.binding, tt.clusters, "")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %s (%v), want the error %q", result(res.Clusters), err, tt.wantErr)
				}
				return
			}
			if err != nil || result(res.Clusters) != tt.want || !strings.Contains(res.Note, tt.wantNote) || (tt.wantNote == "") != (res.Note == "") {
				t.Fatalf("got %s note %q (%v), want %s note %q", result(res.Clusters), res.Note, err, tt.want, tt.wantNote)
			}
		})
	}
}
