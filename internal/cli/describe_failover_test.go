package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// tolerating is a ResourceBinding shop/NAME placed on clusters, with the scheduler's word on when it leaves
// the tainted ones (status.taintedClusters).
func tolerating(name string, clusters []string, tainted ...workv1alpha1.TaintedCluster) *workv1alpha1.ResourceBinding {
	b := rbWith(clusters, nil)
	b.Name = name
	b.Status.TaintedClusters = tainted
	return b
}

func TestPrintFailover(t *testing.T) {
	now := time.Now()
	added := now.Add(-time.Minute)
	unreachable := corev1.Taint{Key: clusterv1alpha1.TaintClusterUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: added}}
	// leaves is the scheduler's entry for m1: leaving after the toleration d (counted from the taint), never
	// (nil), or by the hub's default toleration.
	leaves := func(d *time.Duration) workv1alpha1.TaintedCluster {
		if d == nil {
			return workv1alpha1.TaintedCluster{Cluster: "m1"}
		}
		return workv1alpha1.TaintedCluster{Cluster: "m1", LeavesAt: &metav1.Time{Time: added.Add(*d)}}
	}
	byDefault := leaves(ptr.To(2 * time.Minute))
	byDefault.DefaultToleration = &metav1.Duration{Duration: 2 * time.Minute}
	left := rbWith([]string{"m2"}, []workv1alpha1.GracefulEvictionTask{task("m1", "TaintUntolerated", policyv1alpha1.PurgeGracefully, now, time.Minute)})
	leftCRB := &workv1alpha1.ClusterResourceBinding{ObjectMeta: metav1.ObjectMeta{Name: "ops-namespace"}, Spec: workv1alpha1.ResourceBindingSpec{
		Clusters: []workv1alpha1.TargetCluster{{Name: "m2"}}, GracefulEvictionTasks: []workv1alpha1.GracefulEvictionTask{task("m1", "TaintUntolerated", policyv1alpha1.PurgeNever, now, time.Minute)}}}
	bindings := []workv1alpha1.Binding{
		left, leftCRB,
		tolerating("five-minutes", []string{"m1", "m2"}, leaves(ptr.To(5*time.Minute))),
		tolerating("five-minutes-too", []string{"m1"}, leaves(ptr.To(5*time.Minute))),
		tolerating("an-hour", []string{"m1"}, leaves(ptr.To(time.Hour))),
		tolerating("by-default", []string{"m1"}, byDefault),
		tolerating("expired", []string{"m1"}, leaves(ptr.To(30*time.Second))),
		tolerating("for-ever", []string{"m1"}, leaves(nil)),
		tolerating("not-looked-at-yet", []string{"m1"}),
		tolerating("elsewhere", []string{"m2"}),
	}
	at := func(d time.Duration) string { return added.Add(d).Local().Format(time.TimeOnly) }
	tests := []struct {
		name     string
		taints   []corev1.Taint
		failover *metav1.Condition
		bindings []workv1alpha1.Binding
		want     []string
	}{
		{"NoExecute taint, the guard's word and every kind of wait", []corev1.Taint{unreachable},
			&metav1.Condition{Type: "Failover", Status: metav1.ConditionTrue, Reason: "Tainted", Message: "tainted cluster.flotilla.io/unreachable:NoExecute", LastTransitionTime: metav1.Time{Time: added}},
			bindings, []string{
				"Failover: True (Tainted, since 60s) tainted cluster.flotilla.io/unreachable:NoExecute",
				"Waiting to move:",
				"2 waiting for their replacement (left the cluster, copy kept): shop/web-deployment, ops-namespace",
				"1 moving now (a NoExecute taint not tolerated, or no longer; they stay while nothing else fits): shop/expired",
				"1 will move at " + at(2*time.Minute) + " (in 60s, by the hub's default failover toleration of 2m0s): shop/by-default",
				"2 will move at " + at(5*time.Minute) + " (in 4m): shop/five-minutes, shop/five-minutes-too",
				"1 will move at " + at(time.Hour) + " (in 59m): shop/an-hour",
				"1 staying (tolerate the NoExecute taints without a time limit): shop/for-ever",
			}},
		{"a taint no policy tolerates", []corev1.Taint{{Key: "maintenance", Effect: corev1.TaintEffectNoExecute}}, nil,
			[]workv1alpha1.Binding{tolerating("five-minutes", []string{"m1", "m2"}, leaves(ptr.To(time.Duration(0)))),
				tolerating("five-minutes-too", []string{"m1"}, leaves(ptr.To(time.Duration(0))))}, []string{
				"Waiting to move:",
				"2 moving now (a NoExecute taint not tolerated, or no longer; they stay while nothing else fits): shop/five-minutes, shop/five-minutes-too",
			}},
		{"a NoSchedule taint moves nothing; evictions still wait", []corev1.Taint{{Key: clusterv1alpha1.TaintClusterUnreachable, Effect: corev1.TaintEffectNoSchedule}},
			&metav1.Condition{Type: "Failover", Status: metav1.ConditionFalse, Reason: "MassFailureGuard", Message: "3 of 4 clusters are unreachable", LastTransitionTime: metav1.Time{Time: added}},
			bindings, []string{
				"Failover: False (MassFailureGuard, since 60s) 3 of 4 clusters are unreachable",
				"Waiting to move:",
				"2 waiting for their replacement (left the cluster, copy kept): shop/web-deployment, ops-namespace",
			}},
		{"nothing to move", nil, nil, bindings[2:], []string{"Waiting to move: none"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "m1"}, Spec: clusterv1alpha1.ClusterSpec{Taints: tt.taints}}
			if tt.failover != nil {
				cl.Status.Conditions = []metav1.Condition{*tt.failover}
			}
			var out bytes.Buffer
			printFailover(&out, cl, tt.bindings, now)
			if got := collapsedLines(out.String()); strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestSomeNames(t *testing.T) {
	for names, want := range map[string]string{
		"a":           "a",
		"a b c d e":   "a, b, c, d, e",
		"a b c d e f": "a, b, c, d, e and 1 more",
	} {
		if got := someNames(strings.Fields(names)); got != want {
			t.Errorf("someNames(%q) = %q, want %q", names, got, want)
		}
	}
}
