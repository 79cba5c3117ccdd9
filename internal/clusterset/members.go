package clusterset

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// Reasons of the ClusterSetEmpty and Bound conditions.
const (
	ReasonNoClusters         = "NoClusters"
	ReasonClustersSelected   = "ClustersSelected"
	ReasonClusterSetBound    = "ClusterSetBound"
	ReasonClusterSetNotFound = "ClusterSetNotFound"
)

// Members returns the sorted names of the clusters in set.
func Members(set *clusterv1alpha1.ClusterSet, clusters []clusterv1alpha1.Cluster) []string {
	var names []string
	for i := range clusters {
		if set.Contains(clusters[i].Labels) {
			names = append(names, clusters[i].Name)
		}
	}
	slices.Sort(names)
	return names
}

// setStatus is the status of a set holding count clusters.
func setStatus(set *clusterv1alpha1.ClusterSet, count int) clusterv1alpha1.ClusterSetStatus {
	c := metav1.Condition{Type: clusterv1alpha1.ClusterSetConditionEmpty, ObservedGeneration: set.Generation,
		Status: metav1.ConditionFalse, Reason: ReasonClustersSelected, Message: fmt.Sprintf("clusters in the set: %d", count)}
	if count == 0 {
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, ReasonNoClusters, emptyMessage(set)
	}
	return clusterv1alpha1.ClusterSetStatus{ClusterCount: int32(count), Conditions: withCondition(set.Status.Conditions, c)}
}

// emptyMessage says how a Cluster gets into an empty set.
func emptyMessage(set *clusterv1alpha1.ClusterSet) string {
	switch {
	case set.Spec.ClusterSelector.SelectorType == clusterv1alpha1.LabelSelector:
		return "no cluster matches the set's labelSelector"
	case set.Name == clusterv1alpha1.ClusterSetDefault:
		return fmt.Sprintf("every cluster carries the label %s naming another set", clusterv1alpha1.LabelClusterSet)
	}
	return fmt.Sprintf("no cluster is labelled %s=%s (flotilla clusterset add %s CLUSTER)", clusterv1alpha1.LabelClusterSet, set.Name, set.Name)
}

// bindingStatus is the status of a binding whose set is set (nil when it does not exist) holding members.
func bindingStatus(b *clusterv1alpha1.ClusterSetBinding, set *clusterv1alpha1.ClusterSet, members []string) clusterv1alpha1.ClusterSetBindingStatus {
	c := metav1.Condition{Type: clusterv1alpha1.ClusterSetBindingConditionBound, ObservedGeneration: b.Generation,
		Status: metav1.ConditionTrue, Reason: ReasonClusterSetBound,
		Message: fmt.Sprintf("namespace %s may place on the clusters of ClusterSet %s (%d now)", b.Namespace, b.Spec.ClusterSet, len(members))}
	if set == nil {
		c.Status, c.Reason = metav1.ConditionFalse, ReasonClusterSetNotFound
		c.Message = fmt.Sprintf("ClusterSet %s does not exist: the binding grants no cluster", b.Spec.ClusterSet)
		members = nil
	}
	status := clusterv1alpha1.ClusterSetBindingStatus{ClusterCount: int32(len(members)), Conditions: withCondition(b.Status.Conditions, c)}
	if len(members) > clusterv1alpha1.MaxBindingClusters {
		members = members[:clusterv1alpha1.MaxBindingClusters]
	}
	status.Clusters = members
	return status
}

// withCondition returns a copy of conditions with c set (its transition time kept when its status did not
// change).
func withCondition(conditions []metav1.Condition, c metav1.Condition) []metav1.Condition {
	out := slices.Clone(conditions)
	meta.SetStatusCondition(&out, c)
	return out
}

// conditionsEqual says whether two condition lists say the same, ignoring transition times.
func conditionsEqual(a, b []metav1.Condition) bool {
	return slices.EqualFunc(a, b, func(x, y metav1.Condition) bool {
		return x.Type == y.Type && x.Status == y.Status && x.Reason == y.Reason && x.Message == y.Message && x.ObservedGeneration == y.ObservedGeneration
	})
}
