package override

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// BenchmarkApply renders a Deployment for one cluster through a policy with an image, an args, a labels and
// a plaintext overrider.
func BenchmarkApply(b *testing.B) {
	cluster := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "eu-1"}}
	policies := []Policy{{Namespace: "shop", Name: "p", Spec: &policyv1alpha1.OverrideSpec{OverrideRules: []policyv1alpha1.RuleWithCluster{{
		Overriders: policyv1alpha1.Overriders{
			ImageOverrider:  []policyv1alpha1.ImageOverrider{{Component: "Registry", Operator: "replace", Value: "mirror.eu"}},
			ArgsOverrider:   []policyv1alpha1.CommandArgsOverrider{{ContainerName: "web", Operator: "add", Value: []string{"--region=eu"}}},
			LabelsOverrider: []policyv1alpha1.LabelAnnotationOverrider{{Operator: "add", Value: map[string]string{"region": "eu"}}},
			Plaintext:       []policyv1alpha1.PlaintextOverrider{{Path: "/spec/replicas", Operator: "replace", Value: rawJSON("5")}},
		},
	}}}}}
	template := manifest(b, web)
	b.ReportAllocs()
	for b.Loop() {
		m := template.DeepCopy()
		if _, err := Apply(m, cluster, policies); err != nil {
			b.Fatal(err)
		}
	}
}
