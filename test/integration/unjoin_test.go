package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/cli/planecmd"
	"github.com/flotilla-io/flotilla/internal/registration"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// createPullCluster registers a Pull cluster by hand, without an agent: its Cluster and its namespace, owned
// by the Cluster as registration makes it. It returns once the hub's deregistration has given the Cluster its
// finalizer, as it has for every registered cluster.
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
	waitDeregistrationFinalizer(t, cluster)
	return cluster
}

// waitDeregistrationFinalizer waits until the hub has given the Cluster its deregistration finalizer.
func waitDeregistrationFinalizer(t *testing.T, cluster *clusterv1alpha1.Cluster) {
	t.Helper()
	testenv.Eventually(t, time.Minute, "the Cluster's deregistration finalizer", func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(cluster), cluster); err != nil {
			return err
		}
		if !controllerutil.ContainsFinalizer(cluster, clusterv1alpha1.FinalizerDeregistration) {
			return fmt.Errorf("finalizers %v", cluster.Finalizers)
		}
		return nil
	})
}

func annotateUnjoin(t *testing.T, cluster *clusterv1alpha1.Cluster, mode string) {
	t.Helper()
	patch := client.MergeFrom(cluster.DeepCopy())
	metav1.SetMetaDataAnnotation(&cluster.ObjectMeta, clusterv1alpha1.AnnotationUnjoin, mode)
	if err := env.Client.Patch(context.Background(), cluster, patch); err != nil {
		t.Fatal(err)
	}
}

// TestExecutorKeepsObjectsOfAClusterLeavingTheHub: a Work deleted because its cluster is unjoined, or while
// its Cluster is deleted with kubectl, leaves its objects in the member, without Flotilla's labels and
// annotations when the executor still reaches the member; with unjoin --delete-resources they are deleted
// and the Work keeps its finalizer, reporting Deleted, until the Cluster is gone and the hub releases it.
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
	if c := meta.FindStatusCondition(w.Status.Conditions, workv1alpha1.WorkConditionApplied); c == nil || c.Reason != workv1alpha1.WorkReasonDeleted {
		t.Fatalf("Applied condition %+v, want reason %s", c, workv1alpha1.WorkReasonDeleted)
	}
	if present(t, configMap("exec-leaving", "deleted", nil)) {
		t.Fatal("unjoin --delete-resources left the member object")
	}

	// A Cluster deleted with kubectl (no unjoin mode) leaves the hub keeping its member objects: a Work that
	// goes meanwhile leaves its objects, unmarked. A finalizer of the test holds the Cluster past its
	// deregistration, so that the hub does not release the Work before the executor gets to it.
	const hold = "test.flotilla.io/hold"
	patch := client.MergeFrom(cluster.DeepCopy())
	delete(cluster.Annotations, clusterv1alpha1.AnnotationUnjoin)
	controllerutil.AddFinalizer(cluster, hold)
	if err := env.Client.Patch(ctx, cluster, patch); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "the hub's deregistration done, the test's finalizer left", func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cluster), cluster); err != nil {
			return err
		}
		if !slices.Equal(cluster.Finalizers, []string{hold}) {
			return fmt.Errorf("finalizers %v", cluster.Finalizers)
		}
		return nil
	})
	deleteWork(t, orphaned)
	if w, err := reconcile(t, e, orphaned); err != nil || w != nil {
		t.Fatalf("finalize while the Cluster leaves: %v, Work %v", err, w)
	}
	if !present(t, configMap("exec-leaving", "orphaned", nil)) {
		t.Fatal("a Work of a cluster deleted with kubectl deleted its member object")
	}
	if keys := flotillaKeys(t, configMap("exec-leaving", "orphaned", nil)); len(keys) > 0 {
		t.Fatalf("the object of a cluster deleted with kubectl still carries %v", keys)
	}
	patch = client.MergeFrom(cluster.DeepCopy())
	controllerutil.RemoveFinalizer(cluster, hold)
	if err := env.Client.Patch(ctx, cluster, patch); err != nil {
		t.Fatal(err)
	}
	// The Work held by --delete-resources is released by the hub once its Cluster is gone.
	testenv.EventuallyGone(t, env.Client, w, time.Minute)
}

// runFlotilla runs the flotilla command line in this process against the test hub.
func runFlotilla(ctx context.Context, args ...string) (string, error) {
	return runCLI(ctx, append(args, "--kubeconfig", env.Kubeconfig)...)
}

// runCLI runs the flotilla command line in this process with args as they are.
func runCLI(ctx context.Context, args ...string) (string, error) {
	root := planecmd.NewRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	return out.String(), err
}

// TestUnjoinWithoutAnAgent: a pull cluster whose agent is gone is unjoined without anything hanging: its
// Works (with their execution finalizer, which only an agent would remove) and namespace go. With
// --delete-resources the command instead follows the hub waiting for the agent, says why it gave up, and the
// Cluster stays (the hub still waiting) until an unjoin without --delete-resources finishes it.
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
// runs still takes its namespace along, its member objects kept: the hub lets the Cluster go and releases the
// Works of a cluster that is gone.
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

// TestKubectlDeleteDeregistersLikeUnjoin: a registered Cluster deleted by a plain client delete (kubectl
// delete cluster), marked as unjoin --delete-resources marks it, goes through the hub's deregistration as an
// unjoin does: the hub deletes its Works and, while the member objects of one are not reported deleted, keeps
// the Cluster with a Deleting condition and an event that name the Work; once the executor reports them
// deleted, the Cluster goes, its namespace already being deleted (nothing more is written for it), then the
// namespace's Works, Lease and agent Role.
func TestKubectlDeleteDeregistersLikeUnjoin(t *testing.T) {
	ctx := context.Background()
	const name = "kubectl-deleted"
	cluster, err := registration.EnsureClusterObjects(ctx, env.Client, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Pull}})
	if err != nil {
		t.Fatal(err)
	}
	waitDeregistrationFinalizer(t, cluster)
	ns := clusterv1alpha1.ClusterNamespace(name)
	registered := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "flotilla:agent"}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "flotilla:agent"}},
	}
	for _, obj := range registered {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Fatalf("%T %s of the registered cluster: %v", obj, obj.GetName(), err)
		}
	}
	e := newExecutor(t, env.Client, nil)
	w, err := reconcile(t, e, createWork(t, ns, "default.web", nil, "", configMap(name, "web", nil)))
	if err != nil || !meta.IsStatusConditionTrue(w.Status.Conditions, workv1alpha1.WorkConditionApplied) {
		t.Fatalf("apply: %v", err)
	}

	annotateUnjoin(t, cluster, clusterv1alpha1.UnjoinDeleteResources)
	if err := env.Client.Delete(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "the hub waits for the Work's member objects", func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil || w.DeletionTimestamp == nil {
			return fmt.Errorf("Work not deleted: %v", err)
		}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cluster), cluster); err != nil {
			return err
		}
		c := meta.FindStatusCondition(cluster.Status.Conditions, clusterv1alpha1.ClusterConditionDeleting)
		if c == nil || c.Reason != registration.ReasonDeletingMemberObjects || !strings.Contains(c.Message, "default.web") {
			return fmt.Errorf("Deleting condition %+v", c)
		}
		events, err := env.Kube.EventsV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "regarding.kind=Cluster,regarding.name=" + name})
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(events.Items, func(e eventsv1.Event) bool { return e.Reason == registration.ReasonDeletingMemberObjects }) {
			return errors.New("no event")
		}
		return nil
	})
	if !present(t, configMap(name, "web", nil)) {
		t.Fatal("the member object went before the executor deleted it")
	}

	// The executor (the cluster's agent) deletes the member objects and reports it; the hub goes on.
	if w, err := reconcile(t, e, w); err != nil || w == nil {
		t.Fatalf("finalize: %v, Work %v (want it kept until the Cluster goes)", err, w)
	}
	if present(t, configMap(name, "web", nil)) {
		t.Fatal("the member object was not deleted")
	}
	// Once the Cluster is gone nothing can be written for it: its namespace is already being deleted, so a
	// binding the scheduler has not moved yet cannot write the Work again for the agent to apply.
	testenv.EventuallyGone(t, env.Client, cluster, time.Minute)
	again := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default.web-again", Labels: ownedWorkLabels(t, ns, "default.web-again", nil)}}
	again.Spec.Workload.Manifests = w.Spec.Workload.Manifests
	if err := env.Client.Create(ctx, again); !apierrors.IsNotFound(err) && !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		t.Fatalf("a Work written in the namespace of a cluster that is gone: %v, want it refused", err)
	}
	for _, obj := range append([]client.Object{w}, registered...) {
		testenv.EventuallyGone(t, env.Client, obj, time.Minute)
	}
}
