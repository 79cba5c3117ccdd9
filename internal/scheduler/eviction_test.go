package scheduler

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
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
	addEvictionTasks(spec, res.Clusters, res.Evicted, nil)
	addEvictionTasks(spec, res.Clusters, res.Evicted, nil)
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
		addEvictionTasks(spec, moved, nil, nil)
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

// TestTainted is what the scheduler publishes about the tainted clusters a binding runs on (taintedClusters):
// when it leaves each, as Filter moves it, and whether the hub's default failover toleration decides.
func TestTainted(t *testing.T) {
	now := time.Now()
	added := metav1.NewTime(now.Add(-30 * time.Second).Truncate(time.Second))
	noExecute := func(key string, timeAdded *metav1.Time) corev1.Taint {
		return corev1.Taint{Key: key, Effect: corev1.TaintEffectNoExecute, TimeAdded: timeAdded}
	}
	tolerate := func(key string, seconds *int64) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds}
	}
	at := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: added.Add(d)} }
	unreachable := clusterv1alpha1.TaintClusterUnreachable
	for _, tt := range []struct {
		name      string
		taints    []corev1.Taint
		tolerates []corev1.Toleration
		want      *workv1alpha1.TaintedCluster // nil: no entry
	}{
		{"no taint", nil, nil, nil},
		{"NoSchedule only", []corev1.Taint{{Key: unreachable, Effect: corev1.TaintEffectNoSchedule}}, nil, nil},
		{"untolerated: due since the taint came", []corev1.Taint{noExecute("maintenance", &added)}, nil,
			&workv1alpha1.TaintedCluster{LeavesAt: at(0)}},
		{"untolerated, added at an unknown time: due now", []corev1.Taint{noExecute("maintenance", nil)}, nil,
			&workv1alpha1.TaintedCluster{LeavesAt: &metav1.Time{Time: now.Truncate(time.Second)}}},
		{"tolerated for a minute", []corev1.Taint{noExecute("maintenance", &added)}, []corev1.Toleration{tolerate("maintenance", ptr.To(int64(60)))},
			&workv1alpha1.TaintedCluster{LeavesAt: at(time.Minute)}},
		{"tolerated without a limit", []corev1.Taint{noExecute("maintenance", &added)}, []corev1.Toleration{tolerate("maintenance", nil)},
			&workv1alpha1.TaintedCluster{}},
		{"a health taint, by the default", []corev1.Taint{noExecute(unreachable, &added)}, nil,
			&workv1alpha1.TaintedCluster{LeavesAt: at(5 * time.Minute), DefaultToleration: &metav1.Duration{Duration: 5 * time.Minute}}},
		{"a health taint the policy tolerates itself", []corev1.Taint{noExecute(unreachable, &added)}, []corev1.Toleration{tolerate(unreachable, ptr.To(int64(3600)))},
			&workv1alpha1.TaintedCluster{LeavesAt: at(time.Hour)}},
		{"the first to run out decides", []corev1.Taint{noExecute(unreachable, &added), noExecute("maintenance", &added)},
			[]corev1.Toleration{tolerate("maintenance", ptr.To(int64(3600)))},
			&workv1alpha1.TaintedCluster{LeavesAt: at(5 * time.Minute), DefaultToleration: &metav1.Duration{Duration: 5 * time.Minute}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			spec := deployment(2, &policyv1alpha1.Placement{ClusterTolerations: tt.tolerates}, workv1alpha1.TargetCluster{Name: "a", Replicas: 2})
			clusters := []clusterv1alpha1.Cluster{cluster("a", "eu", tt.taints...), cluster("b", "eu", tt.taints...)} // b: not placed there
			var want []workv1alpha1.TaintedCluster
			if tt.want != nil {
				tt.want.Cluster = "a"
				want = []workv1alpha1.TaintedCluster{*tt.want}
			}
			if got := New(5*time.Minute).Taints.Tainted(spec, clusters, now); !equality.Semantic.DeepEqual(got, want) {
				t.Fatalf("got %+v, want %+v", got, want)
			}
		})
	}
}

// TestEvictionStatus is what the scheduler publishes about each eviction task (evictions): a person ends a
// Never task; the others end with health or at their deadline, the default grace period's when the task
// names none.
func TestEvictionStatus(t *testing.T) {
	created := metav1.NewTime(time.Now().Truncate(time.Second))
	task := func(cluster string, purge policyv1alpha1.PurgeMode, grace *int32, at *metav1.Time) workv1alpha1.GracefulEvictionTask {
		return workv1alpha1.GracefulEvictionTask{FromCluster: cluster, PurgeMode: purge, Reason: ReasonTaintUntolerated, Producer: "scheduler",
			GracePeriodSeconds: grace, CreationTimestamp: at}
	}
	deadline := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: created.Add(d)} }
	got := evictionStatus([]workv1alpha1.GracefulEvictionTask{
		task("a", policyv1alpha1.PurgeGracefully, ptr.To(int32(60)), &created),
		task("b", "", nil, &created),
		task("c", policyv1alpha1.PurgeNever, ptr.To(int32(60)), &created),
		task("d", policyv1alpha1.PurgeGracefully, ptr.To(int32(60)), nil),
		task("a", policyv1alpha1.PurgeNever, nil, nil), // a second task from a: a person's edit
	})
	want := []workv1alpha1.EvictionStatus{
		{FromCluster: "a", EndedBy: workv1alpha1.EvictionEndReplacement, Deadline: deadline(time.Minute)},
		{FromCluster: "b", EndedBy: workv1alpha1.EvictionEndReplacement, Deadline: deadline(DefaultEvictionGrace)},
		{FromCluster: "c", EndedBy: workv1alpha1.EvictionEndPerson},
		{FromCluster: "d", EndedBy: workv1alpha1.EvictionEndReplacement},
	}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}
