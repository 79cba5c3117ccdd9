package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// tolerantPolicy places the ConfigMap NAME of namespace on clusters, tolerating the hub's health taints for
// ever (the test clusters have no agent) and the extra tolerations.
func tolerantPolicy(namespace, name string, clusters []string, extra ...corev1.Toleration) *policyv1alpha1.PropagationPolicy {
	return &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: policyv1alpha1.PropagationSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap", Name: name}},
			Placement: policyv1alpha1.Placement{
				ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: clusters},
				ClusterTolerations: append([]corev1.Toleration{
					{Key: clusterv1alpha1.TaintClusterUnreachable, Operator: corev1.TolerationOpExists},
					{Key: clusterv1alpha1.TaintClusterNotReady, Operator: corev1.TolerationOpExists},
				}, extra...),
			},
		}}
}

// TestCommandLineShowsEvictions: after a NoExecute taint on a cluster, the flotilla commands show the
// binding that left it and waits for its replacement (get bindings, status) and, for the cluster, the taint,
// that binding, and the one that tolerates the taint for an hour and when it will move (describe cluster).
func TestCommandLineShowsEvictions(t *testing.T) {
	ctx := context.Background()
	const ns = "cli-evict"
	clusters := []string{"cli-evict-a", "cli-evict-b"}
	createNamespace(t, ns)
	placeableCluster(t, "cli-evict-a", nil)
	placeableCluster(t, "cli-evict-b", nil)
	create(t, configMap(ns, "moving", nil))
	create(t, configMap(ns, "staying", nil))
	create(t, tolerantPolicy(ns, "moving", clusters))
	create(t, tolerantPolicy(ns, "staying", clusters, corev1.Toleration{Key: "maintenance", Operator: corev1.TolerationOpExists,
		Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(int64(3600))}))
	waitPlaced(t, ns, "moving", "cli-evict-a", "cli-evict-b")
	waitPlaced(t, ns, "staying", "cli-evict-a", "cli-evict-b")

	if out, err := runFlotilla(ctx, "taint", "cluster", "cli-evict-a", "maintenance=planned:NoExecute"); err != nil {
		t.Fatalf("flotilla taint: %v\n%s", err, out)
	}
	// The members have no agent, so the binding never turns Healthy: the task waits out its grace period.
	moved := waitPlaced(t, ns, "moving", "cli-evict-b")
	if tasks := moved.Spec.GracefulEvictionTasks; len(tasks) != 1 || tasks[0].FromCluster != "cli-evict-a" {
		t.Fatalf("eviction tasks %+v, want one from cli-evict-a", tasks)
	}
	movingBinding, stayingBinding := workv1alpha1.BindingName(configMapKind, "moving"), workv1alpha1.BindingName(configMapKind, "staying")

	expect := func(args []string, want ...string) {
		t.Helper()
		out, err := runFlotilla(ctx, args...)
		if err != nil {
			t.Fatalf("flotilla %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		collapsed := strings.Join(strings.Fields(out), " ")
		for _, w := range want {
			if !strings.Contains(collapsed, w) {
				t.Errorf("flotilla %s does not say %q:\n%s", strings.Join(args, " "), w, out)
			}
		}
	}
	expect([]string{"get", "bindings", "-n", ns}, "EVICTING", movingBinding+" ConfigMap/moving", "cli-evict-b(0) cli-evict-a (TaintUntolerated, ")
	expect([]string{"get", "rb", movingBinding, "-n", ns, "-o", "wide"},
		"cli-evict-a: replacement healthy on cli-evict-b (or the grace period ends in ")
	expect([]string{"get", "rb", movingBinding, "-n", ns, "-o", "yaml"}, "kind: ResourceBinding", "gracefulEvictionTasks: - creationTimestamp:",
		"fromCluster: cli-evict-a")
	expect([]string{"get", "bindings", "-n", ns, "-o", "json"}, `"kind": "List"`, `"kind": "ResourceBinding"`)
	expect([]string{"status", "configmap/moving", "-n", ns, "-o", "yaml"}, "apiVersion: work.flotilla.io/v1alpha1", "kind: ResourceBinding")
	expect([]string{"status", "configmap/moving", "-n", ns}, "CLUSTER REASON SINCE PURGE WAITING FOR MESSAGE",
		"cli-evict-a TaintUntolerated", "Gracefully replacement healthy on cli-evict-b (or the grace period ends in ",
		"the cluster has the untolerated taint maintenance:NoExecute")

	cluster := &clusterv1alpha1.Cluster{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "cli-evict-a"}, cluster); err != nil {
		t.Fatal(err)
	}
	var moveAt string
	for _, taint := range cluster.Spec.Taints {
		if taint.Key == "maintenance" {
			moveAt = taint.TimeAdded.Add(time.Hour).Local().Format(time.TimeOnly)
		}
	}
	expect([]string{"describe", "cluster", "cli-evict-a"}, "maintenance=planned NoExecute",
		fmt.Sprintf("1 waiting for their replacement (left the cluster, copy kept): %s/%s", ns, movingBinding),
		fmt.Sprintf("1 will move at %s (in ", moveAt), ns+"/"+stayingBinding)
}

// TestCommandLineEndsANeverEviction: for an eviction with purge mode Never, flotilla status says a person ends
// it and prints the command; that command removes the task, the scheduler does not put it back, and the
// copy on the cluster left goes.
func TestCommandLineEndsANeverEviction(t *testing.T) {
	ctx := context.Background()
	const ns = "cli-never"
	createNamespace(t, ns)
	placeableCluster(t, "cli-never-a", nil)
	placeableCluster(t, "cli-never-b", nil)
	create(t, configMap(ns, "kept", nil))
	policy := tolerantPolicy(ns, "kept", []string{"cli-never-a", "cli-never-b"})
	policy.Spec.Failover = &policyv1alpha1.FailoverBehavior{Cluster: &policyv1alpha1.ClusterFailoverBehavior{PurgeMode: policyv1alpha1.PurgeNever}}
	create(t, policy)
	waitPlaced(t, ns, "kept", "cli-never-a", "cli-never-b")
	works := func() []string {
		t.Helper()
		list := &workv1alpha1.WorkList{}
		if err := env.Client.List(ctx, list, client.InNamespace(clusterv1alpha1.ClusterNamespace("cli-never-a"))); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, w := range list.Items {
			if w.DeletionTimestamp == nil {
				names = append(names, w.Name)
			}
		}
		return names
	}
	testenv.Eventually(t, hangGuard, "a Work on cli-never-a", func() error {
		if len(works()) == 0 {
			return errors.New("none yet")
		}
		return nil
	})

	if out, err := runFlotilla(ctx, "taint", "cluster", "cli-never-a", "maintenance:NoExecute"); err != nil {
		t.Fatalf("flotilla taint: %v\n%s", err, out)
	}
	waitPlaced(t, ns, "kept", "cli-never-b")
	out, err := runFlotilla(ctx, "status", "configmap/kept", "-n", ns)
	if err != nil {
		t.Fatalf("flotilla status: %v\n%s", err, out)
	}
	if !strings.Contains(strings.Join(strings.Fields(out), " "), "Never a person: purgeMode Never keeps the copy until the task is removed from the binding") {
		t.Fatalf("status does not say a person ends the eviction:\n%s", out)
	}
	_, command, ok := strings.Cut(out, "--type=json -p '")
	patch, _, _ := strings.Cut(command, "'")
	if !ok || patch == "" {
		t.Fatalf("status prints no kubectl patch:\n%s", out)
	}
	if len(works()) == 0 {
		t.Fatal("the Work on the cluster left went before anyone ended its Never eviction")
	}

	b, err := binding(ctx, configMapKind, ns, "kept")
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Patch(ctx, b, client.RawPatch(types.JSONPatchType, []byte(patch))); err != nil {
		t.Fatalf("the printed patch %s: %v", patch, err)
	}
	testenv.Eventually(t, hangGuard, "the Work on cli-never-a gone", func() error {
		if names := works(); len(names) > 0 {
			return fmt.Errorf("still there: %v", names)
		}
		return nil
	})
	if b, err := binding(ctx, configMapKind, ns, "kept"); err != nil || len(b.Spec.GracefulEvictionTasks) > 0 {
		t.Fatalf("after the patch: eviction tasks %+v, %v; want none", b.Spec.GracefulEvictionTasks, err)
	}
}
