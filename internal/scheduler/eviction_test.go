package scheduler

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

func TestNoExecuteEviction(t *testing.T) {
	added := metav1.NewTime(time.Now().Add(-30 * time.Second))
	noExecute := corev1.Taint{Key: "maintenance", Effect: corev1.TaintEffectNoExecute, TimeAdded: &added}
	clusters := []clusterv1alpha1.Cluster{cluster("a", "eu", noExecute), cluster("b", "eu")}
	placed := []workv1alpha1.TargetCluster{{Name: "a", Replicas: 2}}
	tolerating := func(seconds int64) *policyv1alpha1.Placement {
		return &policyv1alpha1.Placement{ClusterTolerations: []corev1.Toleration{{Key: "maintenance", Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(seconds)}}}
	}

	res, err := Default().Schedule(deployment(2, nil, placed...), clusters, "")
	if err != nil || result(res.Clusters) != "b=2" || res.Evicted["a"] == "" {
		t.Fatalf("untolerated NoExecute: got %s evicted %v (%v), want b=2 and a evicted", result(res.Clusters), res.Evicted, err)
	}
	res, err = Default().Schedule(deployment(2, tolerating(60), placed...), clusters, "")
	if err != nil || result(res.Clusters) != "a=2,b=2" || len(res.Evicted) != 0 {
		t.Fatalf("tolerated for 60s, 30s in: got %s evicted %v (%v)", result(res.Clusters), res.Evicted, err)
	}
	if next, ok := NextNoExecuteExpiry(deployment(2, tolerating(60), placed...), clusters, time.Now()); !ok || next > 31*time.Second || next < 29*time.Second {
		t.Fatalf("next expiry %s %v, want about 30s", next, ok)
	}
	res, _ = Default().Schedule(deployment(2, tolerating(10), placed...), clusters, "")
	if res.Evicted["a"] == "" || result(res.Clusters) != "b=2" {
		t.Fatalf("tolerated for 10s, 30s in: got %s evicted %v", result(res.Clusters), res.Evicted)
	}

	spec := deployment(2, nil, placed...)
	addEvictionTasks(spec, res.Clusters, res.Evicted)
	addEvictionTasks(spec, res.Clusters, res.Evicted)
	if len(spec.GracefulEvictionTasks) != 1 || spec.GracefulEvictionTasks[0].FromCluster != "a" || *spec.GracefulEvictionTasks[0].Replicas != 2 {
		t.Fatalf("eviction tasks %+v", spec.GracefulEvictionTasks)
	}

	// Nowhere to go: the workload stays where it is.
	if _, err := Default().Schedule(deployment(2, nil, placed...), clusters[:1], ""); err == nil {
		t.Fatal("an evicted binding with no other cluster must not be scheduled away")
	}
}
