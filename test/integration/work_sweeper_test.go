package integration

import (
	"context"
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	bindingctrl "github.com/flotilla-io/flotilla/internal/binding"
	"github.com/flotilla-io/flotilla/internal/mcs"
	"github.com/flotilla-io/flotilla/internal/registration"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// workOwner creates a ClusterResourceBinding to own Works a test writes by hand, and returns the labels that
// name it: the hub's work sweeper releases a Work in a cluster's namespace whose binding does not exist. Its
// template does not exist and its placement selects no cluster, so no controller writes a Work for it or
// changes those it owns. It is deleted after the test, and the Works left then are released.
func workOwner(t *testing.T, name string) (map[string]string, *workv1alpha1.ClusterResourceBinding) {
	t.Helper()
	ctx := context.Background()
	b := &workv1alpha1.ClusterResourceBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: workv1alpha1.ResourceBindingSpec{Resource: workv1alpha1.ObjectReference{APIVersion: "v1", Kind: "Namespace", Name: name + "-absent"},
			Placement: nowhere.DeepCopy()}}
	if err := env.Client.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, b) })
	return map[string]string{workv1alpha1.LabelBindingNamespace: "", workv1alpha1.LabelBindingName: name}, b
}

// ownedWorkLabels returns the labels of a Work a test writes by hand: those given or, for a Work in a
// cluster's namespace without any, those of a binding of its own (workOwner).
func ownedWorkLabels(t *testing.T, namespace, name string, labels map[string]string) map[string]string {
	t.Helper()
	cluster, ok := clusterv1alpha1.ClusterOfNamespace(namespace)
	if !ok || labels != nil {
		return labels
	}
	labels, _ = workOwner(t, "owner."+cluster+"."+name)
	return labels
}

// waitReleased waits until the Work is released as a policy release lets go of a Work: marked
// preserveResourcesOnDeletion, and deleted (with no agent, it stays until its finalizer goes).
func waitReleased(t *testing.T, key client.ObjectKey) {
	t.Helper()
	testenv.Eventually(t, hangGuard, "Work "+key.String()+" released", func() error {
		w := &workv1alpha1.Work{}
		if err := env.Client.Get(context.Background(), key, w); err != nil {
			return err
		}
		if w.DeletionTimestamp == nil || !ptr.Deref(w.Spec.PreserveResourcesOnDeletion, false) {
			return fmt.Errorf("deleted %v, preserveResourcesOnDeletion %v", w.DeletionTimestamp, w.Spec.PreserveResourcesOnDeletion)
		}
		return nil
	})
}

// waitWorkEvent waits for an event on the Work with the reason.
func waitWorkEvent(t *testing.T, key client.ObjectKey, reason string) {
	t.Helper()
	testenv.Eventually(t, hangGuard, "event "+reason+" on Work "+key.String(), func() error {
		events, err := env.Kube.EventsV1().Events(key.Namespace).List(context.Background(), metav1.ListOptions{FieldSelector: "regarding.name=" + key.Name})
		if err != nil {
			return err
		}
		var seen []string
		for _, e := range events.Items {
			if e.Regarding.Kind == "Work" && e.Reason == reason {
				return nil
			}
			seen = append(seen, e.Reason+": "+e.Note)
		}
		return fmt.Errorf("events %q", seen)
	})
}

// TestWorkSweeperReleasesOrphanedWorks: a Work in a cluster's namespace whose binding does not exist, that
// names no binding, whose ServiceExport does not exist, or that an earlier binding of the same name wrote
// (the one there now does not place its template on that cluster) is released: marked to keep its member
// objects, and deleted. The Works of a binding that exists are left alone, also those written before Works
// recorded their binding's UID. The cluster has no agent, so each released Work stays, showing what was done.
func TestWorkSweeperReleasesOrphanedWorks(t *testing.T) {
	ctx := context.Background()
	const cluster = "sweeper-pull"
	if _, err := registration.EnsureClusterObjects(ctx, env.Client, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: cluster},
		Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Pull, ID: "id-" + cluster}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.Delete(ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}})
	})
	ns := clusterv1alpha1.ClusterNamespace(cluster)
	owner, b := workOwner(t, "sweeper-owner")
	cm := manifest(t, configMap("default", "sweeper", nil))
	work := func(name string, labels map[string]string, uid types.UID) client.ObjectKey {
		w := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels,
			Finalizers: []string{workv1alpha1.FinalizerExecution}},
			Spec: workv1alpha1.WorkSpec{Workload: workv1alpha1.WorkloadTemplate{Manifests: []workv1alpha1.Manifest{cm}}}}
		if uid != "" {
			w.Annotations = map[string]string{workv1alpha1.AnnotationBindingUID: string(uid)}
		}
		if err := env.Client.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = env.Client.Patch(ctx, w, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
			_ = env.Client.Delete(ctx, w)
		})
		return client.ObjectKeyFromObject(w)
	}
	// The Works to keep come first: by the time the orphans are released, the sweeper has judged them.
	kept := []client.ObjectKey{work("owned", owner, b.UID), work("unrecorded", owner, "")}
	orphans := []client.ObjectKey{
		work("shop.ghost-configmap", map[string]string{workv1alpha1.LabelBindingNamespace: "shop", workv1alpha1.LabelBindingName: "ghost-configmap"}, ""),
		work("unlabelled", nil, ""),
		work("earlier", owner, "uid-of-an-earlier-binding"),
		work("shop.ghost-multicluster", map[string]string{mcs.LabelExportNamespace: "shop", mcs.LabelServiceName: "ghost"}, ""),
	}
	for _, key := range orphans {
		waitReleased(t, key)
	}
	waitWorkEvent(t, orphans[0], bindingctrl.ReasonOrphanReleased)
	for _, key := range kept {
		w := &workv1alpha1.Work{}
		if err := env.Client.Get(ctx, key, w); err != nil {
			t.Fatal(err)
		}
		if w.DeletionTimestamp != nil || w.Spec.PreserveResourcesOnDeletion != nil {
			t.Fatalf("Work %s of a binding that exists was released: deleted %v, preserve %v", key, w.DeletionTimestamp, w.Spec.PreserveResourcesOnDeletion)
		}
	}
}

// TestWorkSweeperKeepsTheObjectsOfAForceDeletedBinding: a binding deleted with its finalizer removed by hand
// leaves its Work behind; the Work is released and goes, and the object it applied keeps running in the
// member. The member is the test hub itself, as a Push cluster.
func TestWorkSweeperKeepsTheObjectsOfAForceDeletedBinding(t *testing.T) {
	ctx := context.Background()
	const cluster = "sweeper-push"
	pushCluster(t, cluster, map[string][]byte{"token": []byte(memberToken(t)), "caBundle": env.Config.CAData}, nil)
	t.Cleanup(func() {
		_ = env.Client.Delete(ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}})
	})
	const namespace = "sweeper-apps"
	createNamespace(t, namespace)
	// The binding's template does not exist and its placement selects no cluster: its Work is the test's. Its
	// name is no template's binding name: the ConfigMap its Work applies lands on the hub (the member), where
	// the detector would release a binding named kept-configmap as that ConfigMap's.
	b := &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "force-deleted",
		Finalizers: []string{workv1alpha1.FinalizerBinding}},
		Spec: workv1alpha1.ResourceBindingSpec{Resource: workv1alpha1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: namespace, Name: "absent"},
			Placement: nowhere.DeepCopy()}}
	if err := env.Client.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	kept := configMap(namespace, "kept", nil)
	w := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: clusterv1alpha1.ClusterNamespace(cluster), Name: workv1alpha1.WorkName(b.Namespace, b.Name),
		Labels:      map[string]string{workv1alpha1.LabelBindingNamespace: namespace, workv1alpha1.LabelBindingName: b.Name},
		Annotations: map[string]string{workv1alpha1.AnnotationBindingUID: string(b.UID)},
		Finalizers:  []string{workv1alpha1.FinalizerExecution}},
		Spec: workv1alpha1.WorkSpec{Workload: workv1alpha1.WorkloadTemplate{Manifests: []workv1alpha1.Manifest{manifest(t, kept.DeepCopy())}}}}
	if err := env.Client.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, hangGuard, "the Work applied in the member", func() error {
		if !present(t, kept.DeepCopy()) {
			return errors.New("not yet")
		}
		return nil
	})

	// Forced: the finalizer that would have deleted the Work first is removed, then the binding.
	if err := env.Client.Patch(ctx, b, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyGone(t, env.Client, w, hangGuard)
	waitWorkEvent(t, client.ObjectKeyFromObject(w), bindingctrl.ReasonOrphanReleased)
	got := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(kept), got); err != nil || got.DeletionTimestamp != nil {
		t.Fatalf("the member object of the released Work: %v, deleted %v", err, got.DeletionTimestamp)
	}
}
