package integration

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/execution"
)

// TestExecutorManifestConfigs: the executor as an agent runs it honours a Work's manifest configs and
// deleteOption: Update replaces the object (a member's label and key go, its finalizer stays);
// ServerSideApply without force reports a field another manager owns as ApplyConflict instead of taking it;
// SelectivelyOrphan keeps, released, the object its rule names when the Work is deleted, and deletes the
// others.
func TestExecutorManifestConfigs(t *testing.T) {
	ctx := context.Background()
	const ns = "exec-configs"
	ensureNamespace(t, ns)
	e := newExecutor(t, env.Client, nil)
	cm := func(name, value string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"a": value}}
	}
	selector := func(name string) workv1alpha1.ResourceSelector {
		return workv1alpha1.ResourceSelector{Resource: "configmaps", Namespace: ns, Name: name}
	}
	w := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "configs", Labels: ownedWorkLabels(t, ns, "configs", nil),
		Finalizers: []string{workv1alpha1.FinalizerExecution}}, Spec: workv1alpha1.WorkSpec{
		ManifestConfigs: []workv1alpha1.ManifestConfig{
			{ResourceIdentifier: selector("updated"), UpdateStrategy: &workv1alpha1.UpdateStrategy{Type: workv1alpha1.UpdateUpdate}},
			{ResourceIdentifier: selector("unforced"), UpdateStrategy: &workv1alpha1.UpdateStrategy{Type: workv1alpha1.UpdateServerSideApply,
				ServerSideApply: &workv1alpha1.ServerSideApplyConfig{Force: ptr.To(false)}}},
		},
		DeleteOption: &workv1alpha1.DeleteOption{PropagationPolicy: workv1alpha1.DeletePropagationSelectivelyOrphan,
			OrphaningRules: []workv1alpha1.ResourceSelector{selector("kept")}},
	}}
	for _, o := range []client.Object{cm("updated", "1"), cm("unforced", "1"), cm("kept", "1"), cm("gone", "1")} {
		w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, manifest(t, o))
	}
	if err := env.Client.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	var err error
	if w, err = reconcile(t, e, w); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"updated", "unforced", "kept", "gone"} {
		if c := manifestCondition(w, name); c == nil || c.Status != metav1.ConditionTrue {
			t.Fatalf("%s not applied: %+v", name, c)
		}
	}

	// Changes in the member: a label, a key and a finalizer on the updated one; the unforced one's value, by
	// another manager.
	updated := cm("updated", "")
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(updated), updated); err != nil {
		t.Fatal(err)
	}
	updated.Labels["member"] = "x"
	updated.Data["b"] = "member"
	updated.Finalizers = []string{"example.com/hold"}
	if err := env.Client.Update(ctx, updated); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.Get(context.Background(), client.ObjectKeyFromObject(updated), updated)
		updated.Finalizers = nil
		_ = env.Client.Update(context.Background(), updated)
	})
	unforced := cm("unforced", "")
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(unforced), unforced); err != nil {
		t.Fatal(err)
	}
	unforced.Data["a"] = "member"
	if err := env.Client.Update(ctx, unforced, client.FieldOwner("member-tool")); err != nil {
		t.Fatal(err)
	}
	// The Work changes both.
	w.Spec.Workload.Manifests[0], w.Spec.Workload.Manifests[1] = manifest(t, cm("updated", "2")), manifest(t, cm("unforced", "2"))
	if err := env.Client.Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	if w, err = reconcile(t, e, w); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(updated), updated); err != nil {
		t.Fatal(err)
	}
	if updated.Data["a"] != "2" || updated.Data["b"] != "" || updated.Labels["member"] != "" || len(updated.Finalizers) != 1 {
		t.Errorf("Update did not replace the object, or dropped its finalizer: data %v labels %v finalizers %v", updated.Data, updated.Labels, updated.Finalizers)
	}
	if c := manifestCondition(w, "unforced"); c == nil || c.Status != metav1.ConditionFalse || c.Reason != execution.ReasonApplyConflict {
		t.Errorf("the unforced apply over another manager's field: %+v", c)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(unforced), unforced); err != nil || unforced.Data["a"] != "member" {
		t.Errorf("the unforced apply took the member's field: %v %v", err, unforced.Data)
	}

	// SelectivelyOrphan: kept stays, released; gone goes.
	deleteWork(t, w)
	if _, err := reconcile(t, e, w); err != nil {
		t.Fatal(err)
	}
	kept, gone := cm("kept", ""), cm("gone", "")
	if !present(t, kept) || kept.Labels[workv1alpha1.LabelManagedBy] != "" || kept.Annotations[workv1alpha1.AnnotationOwner] != "" {
		t.Errorf("the orphaned ConfigMap was not kept, released: labels %v annotations %v", kept.Labels, kept.Annotations)
	}
	if present(t, gone) {
		t.Error("the ConfigMap no rule orphans was kept")
	}
}
