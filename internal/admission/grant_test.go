package admission

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

// TestWarnUngrantedClusters: a policy in a bound namespace naming a cluster outside its sets draws a
// warning naming the cluster; granted clusters, unknown clusters and namespaces without a binding draw none.
func TestWarnUngrantedClusters(t *testing.T) {
	prod := &clusterv1alpha1.ClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "prod"}}
	binding := &clusterv1alpha1.ClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "prod"}, Spec: clusterv1alpha1.ClusterSetBindingSpec{ClusterSet: "prod"}}
	m1 := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1", Labels: map[string]string{clusterv1alpha1.LabelClusterSet: "prod"}}}
	m3 := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member3"}}
	r := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(prod, binding, m1, m3).Build()
	pp := func(ns, placement string) string {
		return "apiVersion: policy.flotilla.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {name: web, namespace: " + ns + "}\n" +
			"spec:\n  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]\n  placement:\n" + placement
	}
	for _, tc := range []struct {
		name, manifest string
		want           []string
	}{
		{"granted cluster", pp("team-a", "    clusterAffinity: {clusterNames: [member1]}\n"), nil},
		{"ungranted cluster", pp("team-a", "    clusterAffinity: {clusterNames: [member1, member3, ghost]}\n"),
			[]string{"member3 is in no ClusterSet bound to namespace team-a: the namespace's workloads are not placed there"}},
		{"ungranted cluster in a fall-back group", pp("team-a", "    clusterAffinities:\n      - {affinityName: a, clusterNames: [member1]}\n      - {affinityName: b, clusterNames: [member3]}\n"),
			[]string{"member3 is in no ClusterSet bound to namespace team-a: the namespace's workloads are not placed there"}},
		{"namespace without a binding", pp("team-b", "    clusterAffinity: {clusterNames: [member3]}\n"), nil},
		{"override rule", "apiVersion: policy.flotilla.io/v1alpha1\nkind: OverridePolicy\nmetadata: {name: o, namespace: team-a}\n" +
			"spec:\n  overrideRules:\n    - targetCluster: {clusterNames: [member3]}\n",
			[]string{"member3 is in no ClusterSet bound to namespace team-a: the namespace's workloads are not placed there"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := warnUngrantedClusters(context.Background(), r, object(t, tc.manifest)); !slices.Equal(got, tc.want) {
				t.Fatalf("warnings %q, want %q", got, tc.want)
			}
		})
	}
}
