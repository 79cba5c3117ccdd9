package v1alpha1

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestClusterSetContains(t *testing.T) {
	exclusive := func(name string) *ClusterSet {
		return &ClusterSet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: ClusterSetSpec{ClusterSelector: ClusterSetSelector{SelectorType: ExclusiveClusterSetLabel}}}
	}
	selector := func(name string, sel *metav1.LabelSelector) *ClusterSet {
		return &ClusterSet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: ClusterSetSpec{ClusterSelector: ClusterSetSelector{SelectorType: LabelSelector, LabelSelector: sel}}}
	}
	prodLabel := map[string]string{LabelClusterSet: "prod"}
	unlabelled := map[string]string{"env": "dev"}
	for _, tc := range []struct {
		name   string
		set    *ClusterSet
		labels map[string]string
		want   bool
	}{
		{"exclusive set holds its label", exclusive("prod"), prodLabel, true},
		{"exclusive set does not hold another set's cluster", exclusive("dev"), prodLabel, false},
		{"exclusive set does not hold an unlabelled cluster", exclusive("prod"), unlabelled, false},
		{"default holds an unlabelled cluster", exclusive(ClusterSetDefault), unlabelled, true},
		{"default holds a cluster labelled default", exclusive(ClusterSetDefault), map[string]string{LabelClusterSet: ClusterSetDefault}, true},
		{"default does not hold a cluster of another exclusive set", exclusive(ClusterSetDefault), prodLabel, false},
		{"an empty selector holds every cluster (global)", selector(ClusterSetGlobal, &metav1.LabelSelector{}), prodLabel, true},
		{"a nil selector holds every cluster", selector("all", nil), unlabelled, true},
		{"a selector holds what it matches", selector("dev", &metav1.LabelSelector{MatchLabels: map[string]string{"env": "dev"}}), unlabelled, true},
		{"a selector holds nothing else", selector("dev", &metav1.LabelSelector{MatchLabels: map[string]string{"env": "dev"}}), prodLabel, false},
		{"a selector that does not parse holds nothing", selector("bad", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Near"}}}), unlabelled, false},
	} {
		if got := tc.set.Contains(tc.labels); got != tc.want {
			t.Errorf("%s: Contains(%v) = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
}
