package integration

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/cli"
	"github.com/flotilla-io/flotilla/internal/execution"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// createPullCluster registers a Pull cluster by hand, without an agent: its Cluster and its namespace, owned
// by the Cluster as registration makes it.
func createPullCluster(t *testing.T, name string) *clusterv1alpha1.Cluster {
	t.Helper()
	ctx := context.Background()
	cluster := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Pull}}
	if err := env.Client.Create(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.ClusterNamespace(name), OwnerReferences: []metav1.OwnerReference{{
		APIVersion: clusterv1alpha1.GroupVersion.String(), Kind: "Cluster", Name: name, UID: cluster.UID}}}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	return cluster
}

func annotateUnjoin(t *testing.T, cluster *clusterv1alpha1.Cluster, mode string) {
	t.Helper()
	patch := client.MergeFrom(cluster.DeepCopy())
	metav1.SetMetaDataAnnotation(&cluster.ObjectMeta, clusterv1alpha1.AnnotationUnjoin, mode)
	if err := env.Client.Patch(context.Background(), cluster, patch); err != nil {
		t.Fatal(err)
	}
}

// TestExecutorKeepsObjectsOfAClusterLeavingTheHub: a Work deleted because its cluster is unjoined, or after
// its Cluster is gone, leaves its objects in the member, without Flotilla's labels and annotations when the
// executor still reaches the member; with unjoin --delete-resources they are deleted and the Work keeps its
// finalizer, reporting Deleted, until the unjoin removes the Cluster.
func TestExecutorKeepsObjectsOfAClusterLeavingTheHub(t *testing.T) {
	ctx := context.Background()
	cluster := createPullCluster(t, "leaving")
	ns := clusterv1alpha1.ClusterNamespace("leaving")
	e := newExecutor(t, env.Client, nil)
	apply := func(name string) *workv1alpha1.Work {
		w := createWork(t, ns, name, nil, "", configMap("exec-leaving", name, nil))
		w, err := reconcile(t, e, w)
		if err != nil || !meta.IsStatusConditionTrue(w.Status.Conditions, workv1alpha1.WorkConditionApplied) {
			t.Fatalf("apply %s: %v", name, err)
		}
		return w
	}
	kept, deleted, orphaned := apply("kept"), apply("deleted"), apply("orphaned")

	annotateUnjoin(t, cluster, clusterv1alpha1.UnjoinKeepResources)
	deleteWork(t, kept)
	if w, err := reconcile(t, e, kept); err != nil || w != nil {
		t.Fatalf("finalize while unjoining: %v, Work %v", err, w)
	}
	if !present(t, configMap("exec-leaving", "kept", nil)) {
		t.Fatal("unjoin keeping resources deleted a member object")
	}
	if keys := flotillaKeys(t, configMap("exec-leaving", "kept", nil)); len(keys) > 0 {
		t.Fatalf("the object an unjoin kept still carries %v", keys)
	}

	annotateUnjoin(t, cluster, clusterv1alpha1.UnjoinDeleteResources)
	deleteWork(t, deleted)
	w, err := reconcile(t, e, deleted)
	if err != nil || w == nil {
		t.Fatalf("finalize while unjoining with --delete-resources: %v, Work %v (want it kept)", err, w)
	}
	if c := meta.FindStatusCondition(w.Status.Conditions, workv1alpha1.WorkConditionApplied); c == nil || c.Reason != execution.ReasonDeleted {
		t.Fatalf("Applied condition %+v, want reason %s", c, execution.ReasonDeleted)
	}
	if present(t, configMap("exec-leaving", "deleted", nil)) {
		t.Fatal("unjoin --delete-resources left the member object")
	}

	// Once the Cluster is gone, whatever deleted it, a Work that goes leaves its objects.
	if err := env.Client.Delete(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyGone(t, env.Client, cluster, time.Minute)
	if err := client.IgnoreNotFound(env.Client.Delete(ctx, orphaned)); err != nil {
		t.Fatal(err)
	}
	if w, err := reconcile(t, e, orphaned); err != nil || w != nil {
		t.Fatalf("finalize after the Cluster went: %v, Work %v", err, w)
	}
	if !present(t, configMap("exec-leaving", "orphaned", nil)) {
		t.Fatal("a Work of a removed cluster deleted its member object")
	}
	if keys := flotillaKeys(t, configMap("exec-leaving", "orphaned", nil)); len(keys) > 0 {
		t.Fatalf("the object of a removed cluster still carries %v", keys)
	}
	// The Work held by --delete-resources is released, as flotilla unjoin would, so the namespace goes.
	patch := client.MergeFrom(w.DeepCopy())
	w.Finalizers = nil
	if err := client.IgnoreNotFound(env.Client.Patch(ctx, w, patch)); err != nil {
		t.Fatal(err)
	}
}

// runFlotilla runs the flotilla command line in this process against the test hub.
func runFlotilla(ctx context.Context, args ...string) (string, error) {
	root := cli.NewRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append(args, "--kubeconfig", env.Kubeconfig))
	err := root.ExecuteContext(ctx)
	return out.String(), err
}

// TestUnjoinWithoutAnAgent: a pull cluster whose agent is gone is unjoined without anything hanging: its
// Works (with their execution finalizer, which only an agent would remove) and namespace go. With
// --delete-resources the command instead waits for the agent, says why it gave up, and leaves the Cluster.
func TestUnjoinWithoutAnAgent(t *testing.T) {
	ctx := context.Background()
	createPullCluster(t, "agentless")
	ns := clusterv1alpha1.ClusterNamespace("agentless")
	createWork(t, ns, "default.web", nil, "", configMap("default", "web", nil))

	out, err := runFlotilla(ctx, "unjoin", "agentless", "--delete-resources", "--timeout", "3s")
	if err == nil || !strings.Contains(err.Error(), "not deleted in time") || !strings.Contains(err.Error(), "default.web") {
		t.Fatalf("unjoin --delete-resources without an agent: %v\n%s", err, out)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "agentless"}, &clusterv1alpha1.Cluster{}); err != nil {
		t.Fatalf("the Cluster did not stay after a failed --delete-resources: %v", err)
	}

	out, err = runFlotilla(ctx, "unjoin", "agentless", "--timeout", "1m")
	if err != nil || !strings.Contains(out, "left there") {
		t.Fatalf("unjoin: %v\n%s", err, out)
	}
	for _, obj := range []client.Object{&clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "agentless"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}} {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); !apierrors.IsNotFound(err) {
			t.Fatalf("%T %s after unjoin: %v, want it gone", obj, obj.GetName(), err)
		}
	}
	if _, err := runFlotilla(ctx, "unjoin", "agentless"); err == nil || !strings.Contains(err.Error(), "not registered") {
		t.Fatalf("unjoin of an unknown cluster: %v", err)
	}
}

// TestClusterDeletedWithoutUnjoinDoesNotHang: a Cluster deleted directly (kubectl delete) while no agent
// runs still takes its namespace along: the hub releases the Works of a cluster that is gone.
func TestClusterDeletedWithoutUnjoinDoesNotHang(t *testing.T) {
	ctx := context.Background()
	cluster := createPullCluster(t, "deleted-directly")
	ns := clusterv1alpha1.ClusterNamespace("deleted-directly")
	createWork(t, ns, "default.web", nil, "", configMap("default", "web", nil))
	if err := env.Client.Delete(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyGone(t, env.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, time.Minute)
}
