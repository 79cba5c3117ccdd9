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
		Status: clusterv1alpha1.ClusterStatus{APIEnablements: []clusterv1alpha1.APIEnablement{
			{GroupVersion: "apps/v1", Resources: []clusterv1alpha1.APIResource{{Name: "deployments", Kind: "Deployment"}}},
		}},
	}
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
