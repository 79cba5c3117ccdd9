package v1beta1

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// TestPlacementSpecFlotilla: OCM's taint keys become Flotilla's, its effects the Flotilla effects they
// tolerate, other keys and every other field stay; an unknown effect is an error naming the toleration.
func TestPlacementSpecFlotilla(t *testing.T) {
	in := PlacementSpec{
		ClusterSets:      []string{"prod"},
		NumberOfClusters: ptr.To[int32](3),
		Predicates: []clusterv1alpha1.ClusterPredicate{{RequiredClusterSelector: clusterv1alpha1.ClusterSelector{
			CelSelector: clusterv1alpha1.CelSelector{CelExpressions: []string{"true"}}}}},
		Tolerations: []Toleration{
			{Key: TaintClusterUnreachable, Operator: "Exists", TolerationSeconds: ptr.To[int64](60)},
			{Key: TaintClusterUnavailable, Operator: "Exists", Effect: TaintEffectNoSelect},
			{Key: "gpu", Operator: "Equal", Value: "busy", Effect: TaintEffectNoSelectIfNew},
			{Key: "maintenance", Operator: "Exists", Effect: TaintEffectPreferNoSelect},
		},
	}
	got, err := in.Flotilla()
	if err != nil {
		t.Fatal(err)
	}
	want := &clusterv1alpha1.PlacementSpec{
		ClusterSets: in.ClusterSets, NumberOfClusters: in.NumberOfClusters, Predicates: in.Predicates,
		Tolerations: []corev1.Toleration{
			{Key: clusterv1alpha1.TaintClusterUnreachable, Operator: corev1.TolerationOpExists, TolerationSeconds: ptr.To[int64](60)},
			{Key: clusterv1alpha1.TaintClusterNotReady, Operator: corev1.TolerationOpExists},
			{Key: "gpu", Operator: corev1.TolerationOpEqual, Value: "busy", Effect: corev1.TaintEffectNoSchedule},
			{Key: "maintenance", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectPreferNoSchedule},
		},
	}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	in.Tolerations = append(in.Tolerations, Toleration{Key: "x", Effect: "NoSchedule"})
	if _, err := in.Flotilla(); err == nil || err.Error() != `spec.tolerations[4].effect: "NoSchedule" is not an OCM taint effect` {
		t.Errorf("an unknown effect: %v", err)
	}
}
