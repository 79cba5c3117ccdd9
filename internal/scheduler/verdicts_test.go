package scheduler

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// verdictsOf renders a result's verdicts as "cluster:Plugin" in order, for comparison.
func verdictsOf(vs []workv1alpha1.ClusterVerdict) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = v.Cluster + ":" + v.Plugin
	}
	return strings.Join(parts, ",")
}

// TestVerdicts: the scheduler says, for every cluster it leaves out, every reason it has, whether or not
// another cluster fits; the clusters chosen get none.
func TestVerdicts(t *testing.T) {
	gpu := corev1.Taint{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}
	names := func(n ...string) *policyv1alpha1.Placement {
		return &policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: n}}
	}
	aggregated := deployment(2, &policyv1alpha1.Placement{ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
		ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingDivided, ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionAggregated}})
	aggregated.ReplicaRequirements = &workv1alpha1.ReplicaRequirements{ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}
	full := withRoom(cluster("full", "eu"), "0")
	gone := cluster("gone", "eu")
	gone.DeletionTimestamp = &metav1.Time{}
	gone.Finalizers = []string{"x"}

	tests := []struct {
		name     string
		binding  *workv1alpha1.ResourceBindingSpec
		clusters []clusterv1alpha1.Cluster
		want     string // verdicts, cluster:Plugin
		reason   string // a part of the first verdict's reason
		noFit    bool
	}{
		{"affinity", deployment(1, names("a")), []clusterv1alpha1.Cluster{cluster("a", "eu"), cluster("b", "eu")},
			"b:ClusterAffinity", "do not match the cluster affinity", false},
		{"taint", deployment(1, nil), []clusterv1alpha1.Cluster{cluster("a", "eu"), cluster("b", "eu", gpu)},
			"b:TaintToleration", "untolerated taint gpu:NoSchedule", false},
		{"every filter of a cluster, not only the first", deployment(1, names("a")), []clusterv1alpha1.Cluster{cluster("a", "eu"), cluster("b", "eu", gpu)},
			"b:ClusterAffinity,b:TaintToleration", "do not match", false},
		{"API missing", deployment(1, nil), []clusterv1alpha1.Cluster{cluster("a", "eu"), withoutDeployments(cluster("b", "eu"), "complete")},
			"b:APIEnablement", "do not serve apps/v1/Deployment", false},
		{"spread", deployment(1, &policyv1alpha1.Placement{SpreadConstraints: []policyv1alpha1.SpreadConstraint{
			{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MaxGroups: 1}}}),
			[]clusterv1alpha1.Cluster{cluster("a", "eu"), cluster("b", "eu")}, "b:SpreadConstraints", "spread constraints pick", false},
		{"capacity", aggregated, []clusterv1alpha1.Cluster{withRoom(cluster("a", "eu"), "4"), full},
			"full:Capacity", "room for no replica", false},
		{"capacity when nothing fits", func() *workv1alpha1.ResourceBindingSpec { b := aggregated.DeepCopy(); b.Replicas = 9; return b }(),
			[]clusterv1alpha1.Cluster{withRoom(cluster("a", "eu"), "4"), full}, "a:Capacity,full:Capacity", "lack room together", true},
		{"nothing fits", deployment(1, names("x")), []clusterv1alpha1.Cluster{cluster("a", "eu"), gone},
			"a:ClusterAffinity,gone:ClusterRemoval", "do not match", true},
		{"everywhere", deployment(1, nil), []clusterv1alpha1.Cluster{cluster("a", "eu"), cluster("b", "eu")}, "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Default().Schedule(tt.binding, tt.clusters, "")
			if (err != nil) != tt.noFit {
				t.Fatalf("error %v, want an error: %v", err, tt.noFit)
			}
			got, _ := BoundVerdicts(res.Verdicts)
			if verdictsOf(got) != tt.want {
				t.Fatalf("verdicts %s, want %s", verdictsOf(got), tt.want)
			}
			if tt.reason != "" && !strings.Contains(got[0].Reason, tt.reason) {
				t.Fatalf("reason %q, want it to contain %q", got[0].Reason, tt.reason)
			}
		})
	}
}

// TestVerdictsOfEveryAffinityGroup: when no clusterAffinities group fits, each group's verdicts are kept,
// named after the group.
func TestVerdictsOfEveryAffinityGroup(t *testing.T) {
	b := deployment(1, &policyv1alpha1.Placement{ClusterAffinities: []policyv1alpha1.ClusterAffinityTerm{
		{AffinityName: "primary", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"x"}}},
		{AffinityName: "backup", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"y"}}},
	}})
	res, err := Default().Schedule(b, []clusterv1alpha1.Cluster{cluster("a", "eu")}, "")
	if err == nil || len(res.Verdicts) != 2 || !strings.HasPrefix(res.Verdicts[0].Reason, "(group primary)") ||
		!strings.HasPrefix(res.Verdicts[1].Reason, "(group backup)") {
		t.Fatalf("got %+v (%v), want a verdict on a from each group", res.Verdicts, err)
	}
}

// TestBoundVerdicts: a large fleet's verdicts are cut to the bound, and the rest counted.
func TestBoundVerdicts(t *testing.T) {
	var vs []workv1alpha1.ClusterVerdict
	for i := range workv1alpha1.MaxClusterVerdicts + 7 {
		vs = append(vs, workv1alpha1.ClusterVerdict{Cluster: fmt.Sprintf("c%03d", i), Plugin: "ClusterAffinity"})
	}
	kept, omitted := BoundVerdicts(vs)
	if len(kept) != workv1alpha1.MaxClusterVerdicts || omitted != 7 || kept[0].Cluster != "c000" {
		t.Fatalf("kept %d, omitted %d, want %d and 7", len(kept), omitted, workv1alpha1.MaxClusterVerdicts)
	}

	// Clusters refused twice make room for the near miss, which sorts last by name.
	for i := range workv1alpha1.MaxClusterVerdicts {
		vs[i].Plugin = "TaintToleration"
		vs = append(vs, workv1alpha1.ClusterVerdict{Cluster: vs[i].Cluster, Plugin: "ClusterAffinity"})
	}
	vs = append(vs, workv1alpha1.ClusterVerdict{Cluster: "zz-near-miss", Plugin: "ClusterSetGrant"})
	kept, omitted = BoundVerdicts(vs)
	if len(kept) != workv1alpha1.MaxClusterVerdicts || kept[len(kept)-1].Cluster != "zz-near-miss" ||
		!slices.IsSortedFunc(kept, func(a, b workv1alpha1.ClusterVerdict) int { return strings.Compare(a.Cluster, b.Cluster) }) {
		t.Fatalf("kept %d (last %s), omitted %d: want the near miss kept, the list sorted by cluster", len(kept), kept[len(kept)-1].Cluster, omitted)
	}
}
