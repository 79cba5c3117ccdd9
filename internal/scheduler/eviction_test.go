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
	if next, ok := Default().Taints.NextExpiry(deployment(2, tolerating(60), placed...), clusters, time.Now()); !ok || next > 31*time.Second || next < 29*time.Second {
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

// TestFinishEvictions: a task ends when the binding is healthy at its current generation or its grace
// period has passed, and the scheduler looks again at the first deadline.
func TestFinishEvictions(t *testing.T) {
	now := time.Now()
	task := func(cluster string, age time.Duration, grace *int32) workv1alpha1.GracefulEvictionTask {
		return workv1alpha1.GracefulEvictionTask{FromCluster: cluster, Reason: "TaintUntolerated", Producer: "scheduler",
			CreationTimestamp: &metav1.Time{Time: now.Add(-age)}, GracePeriodSeconds: grace}
	}
	seconds := func(s int32) *int32 { return &s }
	tasks := []workv1alpha1.GracefulEvictionTask{task("a", time.Minute, seconds(600)), task("b", 2*time.Minute, seconds(60)),
		task("c", time.Hour, nil), {FromCluster: "d", Reason: "TaintUntolerated", Producer: "scheduler"}}
	healthy := func(status metav1.ConditionStatus, generation int64) []metav1.Condition {
		return []metav1.Condition{{Type: workv1alpha1.ConditionHealthy, Status: status, ObservedGeneration: generation}}
	}
	names := func(ts []workv1alpha1.GracefulEvictionTask) string {
		s := ""
		for _, t := range ts {
			s += t.FromCluster
		}
		return s
	}
	for _, tt := range []struct {
		name       string
		conditions []metav1.Condition
		want       string
	}{
		{"not healthy: only the tasks past their grace period end", healthy(metav1.ConditionFalse, 4), "ad"},
		{"healthy at an earlier generation: the same", healthy(metav1.ConditionTrue, 3), "ad"},
		{"no health reported yet: the same", nil, "ad"},
		{"healthy at the current generation: all end", healthy(metav1.ConditionTrue, 4), ""},
	} {
		if got := names(finishEvictions(tasks, tt.conditions, 4, now)); got != tt.want {
			t.Errorf("%s: remaining %q, want %q", tt.name, got, tt.want)
		}
	}
	if wait := nextEvictionDeadline(finishEvictions(tasks, nil, 4, now), now); wait != 9*time.Minute {
		t.Errorf("next deadline in %s, want 9m (a's)", wait)
	}
	if wait := nextEvictionDeadline(nil, now); wait != 0 {
		t.Errorf("next deadline with no task: %s", wait)
	}
}

// TestEveryMoveIsGraceful: a cluster the placement no longer selects keeps its copy under an eviction task,
// as a tainted one does, unless the policy's purge mode says Directly; a Never task outlives the
// replacement's health.
func TestEveryMoveIsGraceful(t *testing.T) {
	placed := []workv1alpha1.TargetCluster{{Name: "a", Replicas: 2}}
	moved := []workv1alpha1.TargetCluster{{Name: "b", Replicas: 2}}
	withPurge := func(mode policyv1alpha1.PurgeMode) *workv1alpha1.ResourceBindingSpec {
		spec := deployment(2, nil, placed...)
		if mode != "" {
			spec.Failover = &policyv1alpha1.FailoverBehavior{Cluster: &policyv1alpha1.ClusterFailoverBehavior{PurgeMode: mode}}
		}
		return spec
	}
	healthy := []metav1.Condition{{Type: workv1alpha1.ConditionHealthy, Status: metav1.ConditionTrue, ObservedGeneration: 1}}
	for _, tt := range []struct {
		purge                  policyv1alpha1.PurgeMode
		wantTasks, afterHealth int
		wantPurge              policyv1alpha1.PurgeMode
	}{
		{purge: "", wantTasks: 1, afterHealth: 0, wantPurge: policyv1alpha1.PurgeGracefully},
		{purge: policyv1alpha1.PurgeGraciously, wantTasks: 1, afterHealth: 0, wantPurge: policyv1alpha1.PurgeGracefully},
		{purge: policyv1alpha1.PurgeDirectly, wantTasks: 0},
		{purge: policyv1alpha1.PurgeImmediately, wantTasks: 0},
		{purge: policyv1alpha1.PurgeNever, wantTasks: 1, afterHealth: 1, wantPurge: policyv1alpha1.PurgeNever},
	} {
		spec := withPurge(tt.purge)
		addEvictionTasks(spec, moved, nil)
		if len(spec.GracefulEvictionTasks) != tt.wantTasks {
			t.Fatalf("purge %q: %d tasks, want %d", tt.purge, len(spec.GracefulEvictionTasks), tt.wantTasks)
		}
		if tt.wantTasks == 0 {
			continue
		}
		task := spec.GracefulEvictionTasks[0]
		if task.FromCluster != "a" || task.Reason != ReasonPlacementChanged || task.PurgeMode != tt.wantPurge {
			t.Errorf("purge %q: task %+v", tt.purge, task)
		}
		if left := finishEvictions(spec.GracefulEvictionTasks, healthy, 1, time.Now()); len(left) != tt.afterHealth {
			t.Errorf("purge %q: %d tasks left once healthy, want %d", tt.purge, len(left), tt.afterHealth)
		}
	}
}

// TestDefaultFailoverToleration: every binding tolerates the hub's health NoExecute taints for the hub's
// default time, unless its policy tolerates the taint itself, and then the policy's toleration decides.
func TestDefaultFailoverToleration(t *testing.T) {
	added := metav1.NewTime(time.Now().Add(-30 * time.Second))
	unreachable := corev1.Taint{Key: clusterv1alpha1.TaintClusterUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &added}
	clusters := []clusterv1alpha1.Cluster{cluster("a", "eu", unreachable), cluster("b", "eu")}
	placed := []workv1alpha1.TargetCluster{{Name: "a", Replicas: 2}}
	with := func(tolerations ...corev1.Toleration) *policyv1alpha1.Placement {
		return &policyv1alpha1.Placement{ClusterTolerations: tolerations}
	}
	forever := corev1.Toleration{Key: clusterv1alpha1.TaintClusterUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}
	for _, tt := range []struct {
		name          string
		failoverAfter time.Duration
		placement     *policyv1alpha1.Placement
		want          string
	}{
		{"default passed", 10 * time.Second, nil, "b=2"},
		{"default not passed", time.Minute, nil, "a=2,b=2"},
		{"default zero", 0, nil, "b=2"},
		{"another key's toleration keeps the default", 10 * time.Second, with(corev1.Toleration{Key: "maintenance", Operator: corev1.TolerationOpExists}), "b=2"},
		{"own toleration without seconds: never", 0, with(forever), "a=2,b=2"},
		{"own toleration of every taint: never", 0, with(corev1.Toleration{Operator: corev1.TolerationOpExists}), "a=2,b=2"},
		{"own toleration with seconds beats a shorter default", 10 * time.Second, with(corev1.Toleration{Key: clusterv1alpha1.TaintClusterUnreachable,
			Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(int64(60))}), "a=2,b=2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := New(tt.failoverAfter).Schedule(deployment(2, tt.placement, placed...), clusters, "")
			if err != nil || result(res.Clusters) != tt.want {
				t.Fatalf("got %s (%v), want %s", result(res.Clusters), err, tt.want)
			}
		})
	}
	if next, ok := New(time.Minute).Taints.NextExpiry(deployment(2, nil, placed...), clusters, time.Now()); !ok || next > 31*time.Second || next < 29*time.Second {
		t.Fatalf("next expiry under the default %s %v, want about 30s", next, ok)
	}
	if _, ok := New(time.Minute).Taints.NextExpiry(deployment(2, with(forever), placed...), clusters, time.Now()); ok {
		t.Fatal("a toleration without seconds never expires")
	}
}
