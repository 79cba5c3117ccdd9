package scheduler

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// FuzzAffinityMatches evaluates arbitrary affinities against a cluster: no panic, and an excluded cluster
// never matches.
func FuzzAffinityMatches(f *testing.F) {
	f.Add("region", "In", "eu", "env", "prod", "a")
	f.Add("zone", "NotIn", "", "bad key!", "x", "c")
	f.Add("provider", "Exists", "aws", "", "", "")
	f.Fuzz(func(t *testing.T, key, op, value, labelKey, labelValue, exclude string) {
		c := cluster("a", "eu")
		a := &policyv1alpha1.ClusterAffinity{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{labelKey: labelValue}},
			FieldSelector: &policyv1alpha1.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: key, Operator: corev1.NodeSelectorOperator(op), Values: []string{value}}}},
			ExcludeClusters: []string{exclude},
		}
		if AffinityMatches(a, &c) && exclude == c.Name {
			t.Fatal("an excluded cluster matched")
		}
	})
}
