package selection

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// FuzzCluster evaluates arbitrary affinities against a cluster: no panic, and an excluded cluster
// never matches.
func FuzzCluster(f *testing.F) {
	f.Add("region", "In", "eu", "env", "prod", "a")
	f.Add("zone", "NotIn", "", "bad key!", "x", "c")
	f.Add("provider", "Exists", "aws", "", "", "")
	f.Fuzz(func(t *testing.T, key, op, value, labelKey, labelValue, exclude string) {
		c := clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: clusterv1alpha1.ClusterSpec{Region: "eu"}}
		a := &policyv1alpha1.ClusterAffinity{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{labelKey: labelValue}},
			FieldSelector: &policyv1alpha1.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: key, Operator: corev1.NodeSelectorOperator(op), Values: []string{value}}}},
			ExcludeClusters: []string{exclude},
		}
		if Cluster(a, &c) && exclude == c.Name {
			t.Fatal("an excluded cluster matched")
		}
	})
}
