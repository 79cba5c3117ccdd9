package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// task is an eviction task from cluster, started ago before now, with the scheduler's 600 s grace period.
func task(cluster, reason string, purge policyv1alpha1.PurgeMode, now time.Time, ago time.Duration) workv1alpha1.GracefulEvictionTask {
	return workv1alpha1.GracefulEvictionTask{FromCluster: cluster, Reason: reason, PurgeMode: purge, Replicas: ptr.To(int32(2)),
		Message: "the cluster has the untolerated taint maintenance:NoExecute", Producer: "scheduler",
		GracePeriodSeconds: ptr.To(int32(600)), CreationTimestamp: &metav1.Time{Time: now.Add(-ago)}}
}

// rbWith is a ResourceBinding of Deployment shop/web at generation 3, placed on targets, with tasks and
// conditions, and what ends each task as the scheduler publishes it (status.evictions).
func rbWith(targets []string, tasks []workv1alpha1.GracefulEvictionTask, conditions ...metav1.Condition) *workv1alpha1.ResourceBinding {
	b := &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-deployment", Generation: 3},
		Spec: workv1alpha1.ResourceBindingSpec{Resource: workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"},
			GracefulEvictionTasks: tasks}, Status: workv1alpha1.ResourceBindingStatus{Conditions: conditions}}
	for _, t := range targets {
		b.Spec.Clusters = append(b.Spec.Clusters, workv1alpha1.TargetCluster{Name: t, Replicas: 2})
	}
	for _, t := range tasks {
		published := workv1alpha1.EvictionStatus{FromCluster: t.FromCluster, EndedBy: workv1alpha1.EvictionEndReplacement}
		switch {
		case t.PurgeMode.Canonical() == policyv1alpha1.PurgeNever:
			published.EndedBy = workv1alpha1.EvictionEndPerson
		case t.CreationTimestamp != nil:
			published.Deadline = &metav1.Time{Time: t.CreationTimestamp.Add(time.Duration(*t.GracePeriodSeconds) * time.Second)}
		}
		b.Status.Evictions = append(b.Status.Evictions, published)
	}
	return b
}

func healthy(generation int64) metav1.Condition {
	return metav1.Condition{Type: workv1alpha1.ConditionHealthy, Status: metav1.ConditionTrue, ObservedGeneration: generation, Reason: "Healthy"}
}

func TestEvictingColumn(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name  string
		tasks []workv1alpha1.GracefulEvictionTask
		want  string
	}{
		{"none", nil, "-"},
		{"one", []workv1alpha1.GracefulEvictionTask{task("m1", "TaintUntolerated", policyv1alpha1.PurgeGracefully, now, 2*time.Minute)},
			"m1 (TaintUntolerated, 2m)"},
		{"two", []workv1alpha1.GracefulEvictionTask{task("m1", "TaintUntolerated", policyv1alpha1.PurgeGracefully, now, 2*time.Minute),
			task("m3", "PlacementChanged", policyv1alpha1.PurgeNever, now, 30*time.Second)}, "m1 (TaintUntolerated, 2m), m3 (PlacementChanged, 30s)"},
		{"without a creation time", []workv1alpha1.GracefulEvictionTask{{FromCluster: "m1", Reason: "TaintUntolerated"}}, "m1 (TaintUntolerated, -)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := evictingColumn(tt.tasks, now); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestWaitingFor(t *testing.T) {
	now := time.Now()
	gracefully := task("m1", "TaintUntolerated", policyv1alpha1.PurgeGracefully, now, 2*time.Minute)
	noTime := gracefully
	noTime.CreationTimestamp = nil
	tests := []struct {
		name string
		b    *workv1alpha1.ResourceBinding
		want string
	}{
		{"waits for health or the grace period", rbWith([]string{"m2", "m3"}, []workv1alpha1.GracefulEvictionTask{gracefully}),
			"replacement healthy on m2,m3 (or the grace period ends in 8m)"},
		{"the older synonym Graciously is Gracefully",
			rbWith([]string{"m2"}, []workv1alpha1.GracefulEvictionTask{task("m1", "TaintUntolerated", policyv1alpha1.PurgeGraciously, now, 2*time.Minute)}),
			"replacement healthy on m2 (or the grace period ends in 8m)"},
		{"Healthy of an earlier generation says nothing", rbWith([]string{"m2"}, []workv1alpha1.GracefulEvictionTask{gracefully}, healthy(2)),
			"replacement healthy on m2 (or the grace period ends in 8m)"},
		{"Healthy at the current generation ends it", rbWith([]string{"m2"}, []workv1alpha1.GracefulEvictionTask{gracefully}, healthy(3)),
			"nothing: the replacement is healthy, the copy is being removed"},
		{"grace period over", rbWith([]string{"m2"}, []workv1alpha1.GracefulEvictionTask{task("m1", "TaintUntolerated", policyv1alpha1.PurgeGracefully, now, 11*time.Minute)}),
			"nothing: the grace period is over, the copy is being removed"},
		{"no creation time: health alone", rbWith([]string{"m2"}, []workv1alpha1.GracefulEvictionTask{noTime}), "replacement healthy on m2"},
		{"Never waits for a person, healthy or not", rbWith([]string{"m2"}, []workv1alpha1.GracefulEvictionTask{task("m1", "PlacementChanged", policyv1alpha1.PurgeNever, now, time.Hour)}, healthy(3)),
			"a person: purgeMode Never keeps the copy until the task is removed from the binding"},
		{"not published by the scheduler yet", unpublished(rbWith([]string{"m2"}, []workv1alpha1.GracefulEvictionTask{gracefully})),
			"unknown: the scheduler has not published it yet"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := waitingFor(tt.b, tt.b.Spec.GracefulEvictionTasks[0], now); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// unpublished is b without the scheduler's word on its eviction tasks.
func unpublished(b *workv1alpha1.ResourceBinding) *workv1alpha1.ResourceBinding {
	b.Status.Evictions = nil
	return b
}

func TestPrintBindings(t *testing.T) {
	now := time.Now()
	moving := rbWith([]string{"m2"}, []workv1alpha1.GracefulEvictionTask{task("m1", "TaintUntolerated", policyv1alpha1.PurgeGracefully, now, 2*time.Minute)})
	settled := &workv1alpha1.ClusterResourceBinding{ObjectMeta: metav1.ObjectMeta{Name: "ops-namespace"},
		Spec: workv1alpha1.ResourceBindingSpec{Resource: workv1alpha1.ObjectReference{Kind: "Namespace", Name: "ops"}, Clusters: []workv1alpha1.TargetCluster{{Name: "m1"}}}}
	tests := []struct {
		name string
		wide bool
		want []string // the lines, with runs of spaces collapsed to one
	}{
		{"default", false, []string{
			"NAMESPACE NAME RESOURCE SCHEDULED APPLIED HEALTHY CLUSTERS EVICTING",
			"- ops-namespace Namespace/ops - - - m1(0) -",
			"shop web-deployment Deployment/web - - - m2(2) m1 (TaintUntolerated, 2m)",
		}},
		{"wide says what each eviction waits for", true, []string{
			"NAMESPACE NAME RESOURCE SCHEDULED APPLIED HEALTHY CLUSTERS EVICTING WAITING-FOR",
			"- ops-namespace Namespace/ops - - - m1(0) - -",
			"shop web-deployment Deployment/web - - - m2(2) m1 (TaintUntolerated, 2m) m1: replacement healthy on m2 (or the grace period ends in 8m)",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			format := ""
			if tt.wide {
				format = "wide"
			}
			if err := (listOutput{format: format}).tablePrinter().PrintObj(bindingTable([]workv1alpha1.Binding{settled, moving}, now), &out); err != nil {
				t.Fatal(err)
			}
			if got := collapsedLines(out.String()); strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// collapsedLines splits a table into lines with every run of spaces made one, so a test does not depend on
// column widths.
func collapsedLines(s string) []string {
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	return lines
}

func TestPrintStatusListsEvictions(t *testing.T) {
	now := time.Now()
	b := rbWith([]string{"m2"}, []workv1alpha1.GracefulEvictionTask{
		task("m1", "TaintUntolerated", policyv1alpha1.PurgeGracefully, now, 2*time.Minute),
		task("m3", "PlacementChanged", policyv1alpha1.PurgeNever, now, time.Hour)})
	b.Status.AggregatedStatus = []workv1alpha1.AggregatedStatusItem{{ClusterName: "m1", Applied: true, Health: workv1alpha1.ResourceHealthy},
		{ClusterName: "m2", Applied: true, Health: workv1alpha1.ResourceUnhealthy,
			Unschedulable: &workv1alpha1.UnschedulableReplicas{Replicas: 1, Since: metav1.NewTime(now.Add(-90 * time.Second))}}}
	crb := &workv1alpha1.ClusterResourceBinding{ObjectMeta: metav1.ObjectMeta{Name: "ops-namespace"},
		Spec: workv1alpha1.ResourceBindingSpec{Resource: workv1alpha1.ObjectReference{Kind: "Namespace", Name: "ops"}, Clusters: []workv1alpha1.TargetCluster{{Name: "m2"}},
			GracefulEvictionTasks: []workv1alpha1.GracefulEvictionTask{task("m1", "PlacementChanged", policyv1alpha1.PurgeNever, now, time.Minute)}},
		Status: workv1alpha1.ResourceBindingStatus{Evictions: []workv1alpha1.EvictionStatus{{FromCluster: "m1", EndedBy: workv1alpha1.EvictionEndPerson}}}}
	tests := []struct {
		name string
		b    workv1alpha1.Binding
		want []string
	}{
		{"namespaced", b, []string{
			"Deployment/web in shop (binding web-deployment)",
			"CLUSTER REPLICAS APPLIED HEALTH OVERRIDES MESSAGE",
			"m1 2 (leaving) true Healthy - -",
			"m2 2 true Unhealthy - 1 unschedulable for 1m30s",
			"Leaving (the copy stays until the eviction ends):",
			"CLUSTER REASON SINCE PURGE WAITING FOR MESSAGE",
			"m1 TaintUntolerated 2m Gracefully replacement healthy on m2 (or the grace period ends in 8m) the cluster has the untolerated taint maintenance:NoExecute",
			"m3 PlacementChanged 60m Never a person: purgeMode Never keeps the copy until the task is removed from the binding the cluster has the untolerated taint maintenance:NoExecute",
			"To end the eviction from m3 (its copy there is then deleted):",
			`kubectl patch rb web-deployment -n shop --type=json -p '[{"op":"test","path":"/spec/gracefulEvictionTasks/1/fromCluster","value":"m3"},{"op":"remove","path":"/spec/gracefulEvictionTasks/1"}]'`,
		}},
		{"cluster-scoped", crb, []string{
			"Namespace/ops (binding ops-namespace)",
			"CLUSTER REPLICAS APPLIED HEALTH OVERRIDES MESSAGE",
			"Leaving (the copy stays until the eviction ends):",
			"CLUSTER REASON SINCE PURGE WAITING FOR MESSAGE",
			"m1 PlacementChanged 60s Never a person: purgeMode Never keeps the copy until the task is removed from the binding the cluster has the untolerated taint maintenance:NoExecute",
			"To end the eviction from m1 (its copy there is then deleted):",
			`kubectl patch crb ops-namespace --type=json -p '[{"op":"test","path":"/spec/gracefulEvictionTasks/0/fromCluster","value":"m1"},{"op":"remove","path":"/spec/gracefulEvictionTasks/0"}]'`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := printStatus(&out, tt.b, nil, now); err != nil {
				t.Fatal(err)
			}
			if got := collapsedLines(out.String()); strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// flotilla get and describe refuse bad flags before they reach the hub (the kubeconfig does not exist).
func TestGetAndDescribeRefuseBadFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"get", "bindings", "-l", "app=web=x"}, `--selector "app=web=x"`},
		{[]string{"get", "bindings", "-n", "Shop"}, `--namespace "Shop"`},
		{[]string{"get", "crb", "-n", "shop"}, "cluster-scoped bindings (crb) are in no namespace"},
		// With --clusters, kinds are read in the members: their flags are checked before anything is read too.
		{[]string{"get", "pods", "a", "b", "--clusters", "all"}, "takes at most one NAME"},
		{[]string{"get", "pods", "--clusters", "m1,M2"}, `--clusters "m1,M2": cluster "M2"`},
		{[]string{"get", "pods", "--cluster-timeout", "0s", "--clusters", "all"}, "--cluster-timeout 0s: must be positive"},
		{[]string{"get", "pods", "web", "-A", "--clusters", "all"}, "cannot be read with --all-namespaces"},
		{[]string{"get", "pods", "-w", "--clusters", "all"}, "--watch: flotilla get watches the hub's clusters and bindings"},
		{[]string{"get", "clusters", "-o", "custom-columns=NAME"}, `column "NAME": want HEADER:PATH`},
		{[]string{"get", "bindings", "-o", "table"}, `--output "table"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			root := NewPluginRoot()
			root.SetArgs(append(tt.args, "--kubeconfig", t.TempDir()+"/none"))
			if err := root.Execute(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestPrintTaints(t *testing.T) {
	now := time.Now()
	var out bytes.Buffer
	printTaints(&out, []corev1.Taint{
		{Key: "cluster.flotilla.io/unreachable", Effect: corev1.TaintEffectNoSchedule, TimeAdded: &metav1.Time{Time: now.Add(-3 * time.Minute)}},
		{Key: "cluster.flotilla.io/unreachable", Effect: corev1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: now.Add(-2 * time.Minute)}},
		{Key: "maintenance", Value: "planned", Effect: corev1.TaintEffectNoExecute},
	}, now)
	want := []string{
		"Taints:",
		"TAINT EFFECT AGE SET BY",
		"cluster.flotilla.io/unreachable NoSchedule 3m health monitor",
		"cluster.flotilla.io/unreachable NoExecute 2m health monitor",
		"maintenance=planned NoExecute - -",
	}
	if got := collapsedLines(out.String()); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
