package clusterset

import (
	"fmt"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

func cluster(name string, labels map[string]string) clusterv1alpha1.Cluster {
	return clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func TestMembers(t *testing.T) {
	clusters := []clusterv1alpha1.Cluster{
		cluster("m3", map[string]string{clusterv1alpha1.LabelClusterSet: "prod", "tier": "gold"}),
		cluster("m1", map[string]string{clusterv1alpha1.LabelClusterSet: "prod"}),
		cluster("m2", nil),
		cluster("m4", map[string]string{clusterv1alpha1.LabelClusterSet: "default", "tier": "gold"}),
	}
	gold := &clusterv1alpha1.ClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "gold"}, Spec: clusterv1alpha1.ClusterSetSpec{ClusterSelector: clusterv1alpha1.ClusterSetSelector{
		SelectorType: clusterv1alpha1.LabelSelector, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}}}}}
	for _, tc := range []struct {
		set  *clusterv1alpha1.ClusterSet
		want []string
	}{
		{&clusterv1alpha1.ClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "prod"}}, []string{"m1", "m3"}},
		{Builtin(clusterv1alpha1.ClusterSetDefault), []string{"m2", "m4"}},
		{Builtin(clusterv1alpha1.ClusterSetGlobal), []string{"m1", "m2", "m3", "m4"}},
		{gold, []string{"m3", "m4"}},
		{&clusterv1alpha1.ClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "dev"}}, nil},
	} {
		if got := Members(tc.set, clusters); !slices.Equal(got, tc.want) {
			t.Errorf("Members(%s) = %v, want %v", tc.set.Name, got, tc.want)
		}
	}
}

func TestSetStatus(t *testing.T) {
	prod := &clusterv1alpha1.ClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "prod"}}
	empty := setStatus(prod, 0)
	c := meta.FindStatusCondition(empty.Conditions, clusterv1alpha1.ClusterSetConditionEmpty)
	if empty.ClusterCount != 0 || c == nil || c.Status != metav1.ConditionTrue || c.Reason != ReasonNoClusters ||
		c.Message != "no cluster is labelled cluster.flotilla.io/clusterset=prod (flotilla clusterset add prod CLUSTER)" {
		t.Fatalf("empty set: %+v", empty)
	}
	prod.Status = empty
	two := setStatus(prod, 2)
	c = meta.FindStatusCondition(two.Conditions, clusterv1alpha1.ClusterSetConditionEmpty)
	if two.ClusterCount != 2 || c.Status != metav1.ConditionFalse || c.Reason != ReasonClustersSelected {
		t.Fatalf("set of two: %+v", two)
	}
	if conditionsEqual(empty.Conditions, two.Conditions) {
		t.Fatal("a set that fills up reads as unchanged")
	}
	prod.Status = two
	if again := setStatus(prod, 2); !conditionsEqual(again.Conditions, two.Conditions) {
		t.Fatalf("the same count reads as a change: %+v then %+v", two, again)
	}
}

func TestBindingStatus(t *testing.T) {
	b := &clusterv1alpha1.ClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "prod"}, Spec: clusterv1alpha1.ClusterSetBindingSpec{ClusterSet: "prod"}}
	missing := bindingStatus(b, nil, []string{"m1"})
	c := meta.FindStatusCondition(missing.Conditions, clusterv1alpha1.ClusterSetBindingConditionBound)
	if c.Status != metav1.ConditionFalse || c.Reason != ReasonClusterSetNotFound || missing.ClusterCount != 0 || missing.Clusters != nil {
		t.Fatalf("binding to a missing set: %+v", missing)
	}
	many := make([]string, clusterv1alpha1.MaxBindingClusters+5)
	for i := range many {
		many[i] = fmt.Sprintf("m%05d", i)
	}
	bound := bindingStatus(b, &clusterv1alpha1.ClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "prod"}}, many)
	c = meta.FindStatusCondition(bound.Conditions, clusterv1alpha1.ClusterSetBindingConditionBound)
	if c.Status != metav1.ConditionTrue || c.Reason != ReasonClusterSetBound || int(bound.ClusterCount) != len(many) || len(bound.Clusters) != clusterv1alpha1.MaxBindingClusters {
		t.Fatalf("binding to a big set: condition %+v, count %d, %d clusters listed", c, bound.ClusterCount, len(bound.Clusters))
	}
}
