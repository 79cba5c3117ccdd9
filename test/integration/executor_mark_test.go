package integration

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/execution"
	"github.com/flotilla-io/flotilla/internal/registration"
)

// memberConfigMap reads a ConfigMap from the member (the test hub).
func memberConfigMap(t *testing.T, namespace, name string) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, cm); err != nil {
		t.Fatal(err)
	}
	return cm
}

// wantCondition fails unless the Work's manifest name has an Applied condition with reason.
func wantCondition(t *testing.T, w *workv1alpha1.Work, name, reason string) {
	t.Helper()
	if c := manifestCondition(w, name); c == nil || c.Reason != reason {
		t.Fatalf("manifest %s: condition %+v, want reason %s", name, c, reason)
	}
}

// TestExecutorLeavesAnotherHubsObjects: two hubs share a member and each has a Work of the same name (Works
// are named after their bindings). What the other hub's executor created there is not this hub's: applying
// this hub's Work over it is refused as a conflict, and neither dropping it from the Work nor deleting the
// Work deletes it.
func TestExecutorLeavesAnotherHubsObjects(t *testing.T) {
	ours := newExecutor(t, env.Client, nil)
	theirs := newExecutor(t, env.Client, nil)
	theirs.HubID = "another-hub"
	w := createWork(t, "exec-works", "two-hubs", nil, "", annotatedConfigMap("exec-two-hubs", "theirs", nil))
	w, err := reconcile(t, theirs, w)
	if err != nil || !meta.IsStatusConditionTrue(w.Status.Conditions, workv1alpha1.WorkConditionApplied) {
		t.Fatalf("the other hub's apply: %v, %+v", err, manifestCondition(w, "theirs"))
	}
	theirsBefore := memberConfigMap(t, "exec-two-hubs", "theirs")
	if owner := theirsBefore.Annotations[workv1alpha1.AnnotationOwner]; !strings.HasPrefix(owner, "another-hub/") {
		t.Fatalf("the other hub's object carries owner %q, want its hub's ID", owner)
	}

	if w, err = reconcile(t, ours, w); err != nil {
		t.Fatal(err)
	}
	wantCondition(t, w, "theirs", execution.ReasonConflictAbort)
	if after := memberConfigMap(t, "exec-two-hubs", "theirs"); after.ResourceVersion != theirsBefore.ResourceVersion {
		t.Fatalf("this hub applied over the other hub's object: annotations %v", after.Annotations)
	}

	w = setWorkload(t, w, annotatedConfigMap("exec-two-hubs", "ours", nil))
	if w, err = reconcile(t, ours, w); err != nil {
		t.Fatal(err)
	}
	wantCondition(t, w, "ours", execution.ReasonApplied)
	if !present(t, annotatedConfigMap("exec-two-hubs", "theirs", nil)) {
		t.Fatal("this hub pruned the other hub's object")
	}

	w = setWorkload(t, w, annotatedConfigMap("exec-two-hubs", "ours", nil), annotatedConfigMap("exec-two-hubs", "theirs", nil))
	if w, err = reconcile(t, ours, w); err != nil {
		t.Fatal(err)
	}
	wantCondition(t, w, "theirs", execution.ReasonConflictAbort)
	deleteWork(t, w)
	if w, err := reconcile(t, ours, w); err != nil || w != nil {
		t.Fatalf("finalize: %v, Work %v", err, w)
	}
	if present(t, annotatedConfigMap("exec-two-hubs", "ours", nil)) {
		t.Fatal("the object this hub created is still there after its Work went")
	}
	if !present(t, annotatedConfigMap("exec-two-hubs", "theirs", nil)) {
		t.Fatal("deleting this hub's Work deleted the other hub's object")
	}
}

// TestExecutorTakesOverWhatEarlierVersionsMarked: after an upgrade, the objects an earlier version created
// (marked without a hub ID) stay the Work's own: applied over without a conflict and marked anew with the
// hub's ID, and pruned when the Work drops them. Their mark copied onto an object the Work never applied does
// not count.
func TestExecutorTakesOverWhatEarlierVersionsMarked(t *testing.T) {
	earlier := newExecutor(t, env.Client, nil)
	earlier.HubID = "" // marks as versions before the hub's ID did
	w := createWork(t, "exec-works", "upgraded", nil, "", annotatedConfigMap("exec-upgraded", "kept", nil),
		annotatedConfigMap("exec-upgraded", "dropped", nil))
	w, err := reconcile(t, earlier, w)
	if err != nil || !meta.IsStatusConditionTrue(w.Status.Conditions, workv1alpha1.WorkConditionApplied) {
		t.Fatalf("apply by the earlier version: %v", err)
	}
	kept := memberConfigMap(t, "exec-upgraded", "kept")
	if _, ok := kept.Annotations[workv1alpha1.AnnotationOwner]; ok || kept.Annotations[workv1alpha1.AnnotationWork] != "exec-works/upgraded" {
		t.Fatalf("the earlier version's mark: annotations %v", kept.Annotations)
	}
	// A member user copies the kept object's labels and annotations onto an object of their own.
	copied := annotatedConfigMap("exec-upgraded", "copy", kept.Annotations)
	copied.Labels = kept.Labels
	copied.Data = map[string]string{"k": "the user's"}
	if err := env.Client.Create(context.Background(), copied); err != nil {
		t.Fatal(err)
	}

	ours := newExecutor(t, env.Client, nil)
	w = setWorkload(t, w, annotatedConfigMap("exec-upgraded", "kept", nil), annotatedConfigMap("exec-upgraded", "copy", nil))
	if w, err = reconcile(t, ours, w); err != nil {
		t.Fatal(err)
	}
	wantCondition(t, w, "kept", execution.ReasonApplied)
	if owner := memberConfigMap(t, "exec-upgraded", "kept").Annotations[workv1alpha1.AnnotationOwner]; !strings.HasPrefix(owner, ours.HubID+"/") {
		t.Fatalf("the object an earlier version marked was not marked anew: owner %q", owner)
	}
	if present(t, annotatedConfigMap("exec-upgraded", "dropped", nil)) {
		t.Fatal("the object an earlier version created was not pruned when the Work dropped it")
	}
	wantCondition(t, w, "copy", execution.ReasonConflictAbort)
	if got := memberConfigMap(t, "exec-upgraded", "copy"); got.Data["k"] != "the user's" {
		t.Fatalf("the object carrying a copied mark was applied over: %v", got.Data)
	}

	// Deleting the Work deletes what it created, and not the copy.
	deleteWork(t, w)
	if w, err := reconcile(t, ours, w); err != nil || w != nil {
		t.Fatalf("finalize: %v, Work %v", err, w)
	}
	if present(t, annotatedConfigMap("exec-upgraded", "kept", nil)) {
		t.Fatal("the Work's own object is still there")
	}
	if !present(t, annotatedConfigMap("exec-upgraded", "copy", nil)) {
		t.Fatal("the object carrying a copied mark was deleted with the Work")
	}
}

// TestExecutorDoesNotTakeACopiedMarkForItsOwn: a member user copies the full mark of an object the Work
// created onto another object the Work then names; the executor refuses to apply over it and does not delete
// it.
func TestExecutorDoesNotTakeACopiedMarkForItsOwn(t *testing.T) {
	ours := newExecutor(t, env.Client, nil)
	w := createWork(t, "exec-works", "copied", nil, "", annotatedConfigMap("exec-copied", "original", nil))
	w, err := reconcile(t, ours, w)
	if err != nil || !meta.IsStatusConditionTrue(w.Status.Conditions, workv1alpha1.WorkConditionApplied) {
		t.Fatalf("apply: %v", err)
	}
	original := memberConfigMap(t, "exec-copied", "original")
	copied := annotatedConfigMap("exec-copied", "copy", original.Annotations)
	copied.Labels = original.Labels
	copied.Data = map[string]string{"k": "the user's"}
	if err := env.Client.Create(context.Background(), copied); err != nil {
		t.Fatal(err)
	}
	w = setWorkload(t, w, annotatedConfigMap("exec-copied", "original", nil), annotatedConfigMap("exec-copied", "copy", nil))
	if w, err = reconcile(t, ours, w); err != nil {
		t.Fatal(err)
	}
	wantCondition(t, w, "copy", execution.ReasonConflictAbort)
	w = setWorkload(t, w, annotatedConfigMap("exec-copied", "original", nil))
	if _, err = reconcile(t, ours, w); err != nil {
		t.Fatal(err)
	}
	if got := memberConfigMap(t, "exec-copied", "copy"); got.Data["k"] != "the user's" || got.DeletionTimestamp != nil {
		t.Fatalf("the object carrying a copied mark was taken over or deleted: %v", got)
	}
}

// TestAgentLearnsTheHubID: an agent reads, with its own identity, the ID the hub publishes in its
// cluster-info, which is the hub's kube-system namespace UID; its executor marks member objects with it.
func TestAgentLearnsTheHubID(t *testing.T) {
	ctx := context.Background()
	agent, _ := join(t, env, "hub-id-reader", "id-hub-id-reader")
	want, err := registration.HubID(ctx, env.Client)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := registration.PublishedHubID(ctx, agent); err != nil || got != want {
		t.Fatalf("the agent read hub ID %q (%v), want %q", got, err, want)
	}
}
