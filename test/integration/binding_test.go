package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/registration"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// bindingTestManager is the field manager this test creates its binding under.
const bindingTestManager = "binding-test"

// boundGizmo sets up what the binding controllers work on, without the detector: a template of a kind no
// policy selects (so the detector never touches it; its group is named after the namespace) and its binding,
// placed by hand on a Cluster that has no agent (the test reports the Work's status in its place). The
// binding's own placement selects no cluster, so the scheduler only writes its Scheduled condition and leaves
// spec.clusters alone.
func boundGizmo(t *testing.T, namespace, cluster string) (*unstructured.Unstructured, *workv1alpha1.ResourceBinding) {
	t.Helper()
	ctx := context.Background()
	group := strings.ReplaceAll(namespace, "-", ".") + ".example.io" // a kind of its own for each test
	createCRD(t, widgetCRD(group, "Gizmo"))
	if _, err := registration.EnsureClusterObjects(ctx, env.Client, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: cluster},
		Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Pull, ID: "id-" + cluster}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.Delete(ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}})
	})
	createNamespace(t, namespace)
	template := customObject(group+"/v1", "Gizmo", namespace, "g")
	create(t, template)
	b := &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: workv1alpha1.BindingName(schema.GroupKind{Group: group, Kind: "Gizmo"}, "g"),
			Finalizers: []string{workv1alpha1.FinalizerBinding}},
		Spec: workv1alpha1.ResourceBindingSpec{
			Resource:  workv1alpha1.ObjectReference{APIVersion: group + "/v1", Kind: "Gizmo", Namespace: namespace, Name: "g", UID: template.GetUID()},
			Placement: nowhere.DeepCopy(),
			Clusters:  []workv1alpha1.TargetCluster{{Name: cluster}},
		},
	}
	if err := env.Client.Create(ctx, b, client.FieldOwner(bindingTestManager)); err != nil {
		t.Fatal(err)
	}
	// The binding goes first; with no agent, the test lets go of its Work as the agent would.
	t.Cleanup(func() {
		_ = env.Client.Delete(ctx, b)
		w := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: clusterv1alpha1.ClusterNamespace(cluster), Name: workv1alpha1.WorkName(b.Namespace, b.Name)}}
		testenv.Eventually(t, hangGuard, "the binding's Work deleted", func() error {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(w), w); apierrors.IsNotFound(err) {
				return nil
			} else if err != nil {
				return err
			}
			if w.DeletionTimestamp == nil {
				return errors.New("not deleted yet")
			}
			return env.Client.Patch(ctx, w, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
		})
		testenv.EventuallyGone(t, env.Client, b, hangGuard)
	})
	return template, b
}

// reportStatus writes a Work's status as its agent would: the one manifest applied, with health and status.
func reportStatus(t *testing.T, w *workv1alpha1.Work, health workv1alpha1.ResourceHealth, readyReplicas int) {
	t.Helper()
	reportManifestStatus(t, w, health, fmt.Sprintf(`{"readyReplicas":%d}`, readyReplicas))
}

// reportManifestStatus writes a Work's status as its agent would: its first manifest applied and observed,
// with health and the member object's status (JSON).
func reportManifestStatus(t *testing.T, w *workv1alpha1.Work, health workv1alpha1.ResourceHealth, status string) {
	t.Helper()
	now := metav1.Now()
	w.Status = workv1alpha1.WorkStatus{
		Conditions: []metav1.Condition{{Type: workv1alpha1.WorkConditionApplied, Status: metav1.ConditionTrue, Reason: "Applied",
			ObservedGeneration: w.Generation, LastTransitionTime: now}},
		ManifestStatuses: []workv1alpha1.ManifestStatus{{
			Identifier: workv1alpha1.ResourceIdentifier{Version: "v1", Kind: "Gizmo", Name: "g"},
			Applied:    true, Health: health,
			Status: &runtime.RawExtension{Raw: []byte(status)},
			Conditions: []metav1.Condition{
				{Type: workv1alpha1.WorkConditionApplied, Status: metav1.ConditionTrue, Reason: "Applied", LastTransitionTime: now},
				{Type: workv1alpha1.ManifestConditionObserved, Status: metav1.ConditionTrue, Reason: "Observed", LastTransitionTime: now},
			},
		}},
	}
	if err := env.Client.Status().Update(context.Background(), w); err != nil {
		t.Fatal(err)
	}
}

// owns says whether a managedFields entry holds field, as the API server spells it (f:name, k:{...}); in
// the entry's JSON the quotes of a key are escaped.
func owns(e metav1.ManagedFieldsEntry, field string) bool {
	return e.FieldsV1 != nil && strings.Contains(string(e.FieldsV1.Raw), strings.ReplaceAll(field, `"`, `\"`))
}

// TestBindingControllers: the render controller ("binding") and the status controller ("binding-status")
// each do their part and only theirs. A Work's status reaches the binding without the Work being written; a
// template change, and a Cluster label an override targets, reach the Work without anyone touching the
// binding; each owns its conditions under its own field manager, and neither removes the scheduler's.
func TestBindingControllers(t *testing.T) {
	ctx := context.Background()
	const namespace, cluster = "binding-controllers", "binding-member"
	template, b := boundGizmo(t, namespace, cluster)
	key := client.ObjectKeyFromObject(b)
	w := &workv1alpha1.Work{}
	workKey := client.ObjectKey{Namespace: clusterv1alpha1.ClusterNamespace(cluster), Name: workv1alpha1.WorkName(b.Namespace, b.Name)}
	testenv.Eventually(t, hangGuard, "the Work rendered", func() error { return env.Client.Get(ctx, workKey, w) })
	var scheduled metav1.Condition
	testenv.Eventually(t, hangGuard, "Scheduled and FullyApplied on the binding", func() error {
		if err := env.Client.Get(ctx, key, b); err != nil {
			return err
		}
		for _, c := range []string{workv1alpha1.ConditionScheduled, workv1alpha1.ConditionFullyApplied} {
			if meta.FindStatusCondition(b.Status.Conditions, c) == nil {
				return fmt.Errorf("no %s condition: %+v", c, b.Status.Conditions)
			}
		}
		scheduled = *meta.FindStatusCondition(b.Status.Conditions, workv1alpha1.ConditionScheduled)
		return nil
	})

	t.Run("a Work's status reaches the binding, and the Work is not written", func(t *testing.T) {
		reportStatus(t, w, workv1alpha1.ResourceHealthy, 1)
		reported := w.DeepCopy()
		testenv.Eventually(t, hangGuard, "Healthy and the member's status on the binding", func() error {
			if err := env.Client.Get(ctx, key, b); err != nil {
				return err
			}
			if !meta.IsStatusConditionTrue(b.Status.Conditions, workv1alpha1.ConditionHealthy) ||
				!meta.IsStatusConditionTrue(b.Status.Conditions, workv1alpha1.ConditionFullyApplied) {
				return fmt.Errorf("conditions %+v", b.Status.Conditions)
			}
			if len(b.Status.AggregatedStatus) != 1 || b.Status.AggregatedStatus[0].Status == nil ||
				string(b.Status.AggregatedStatus[0].Status.Raw) != `{"readyReplicas":1}` {
				return fmt.Errorf("aggregated status %+v", b.Status.AggregatedStatus)
			}
			return nil
		})
		if err := env.Client.Get(ctx, workKey, w); err != nil {
			t.Fatal(err)
		}
		if w.ResourceVersion != reported.ResourceVersion || w.Generation != reported.Generation {
			t.Fatalf("the Work was written after its status changed: resourceVersion %s, generation %d; reported at %s, %d",
				w.ResourceVersion, w.Generation, reported.ResourceVersion, reported.Generation)
		}
	})

	t.Run("a template change renders the Work again", func(t *testing.T) {
		if err := unstructured.SetNestedField(template.Object, int64(5), "spec", "size"); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Update(ctx, template); err != nil {
			t.Fatal(err)
		}
		generation := w.Generation
		testenv.Eventually(t, hangGuard, "the Work carries the new size", func() error {
			if err := env.Client.Get(ctx, workKey, w); err != nil {
				return err
			}
			if len(w.Spec.Workload.Manifests) == 0 || !strings.Contains(string(w.Spec.Workload.Manifests[0].Raw), `"size":5`) {
				return fmt.Errorf("manifest %s", w.Spec.Workload.Manifests)
			}
			return nil
		})
		if w.Generation != generation+1 {
			t.Fatalf("Work generation %d, want one write (%d)", w.Generation, generation+1)
		}
		if w.Status.ManifestStatuses == nil {
			t.Fatal("rendering dropped the Work's status")
		}
		// Status reported for the new manifest is taken in like any other.
		reportStatus(t, w, workv1alpha1.ResourceUnhealthy, 0)
		testenv.Eventually(t, hangGuard, "Healthy=False on the binding", func() error {
			if err := env.Client.Get(ctx, key, b); err != nil {
				return err
			}
			if c := meta.FindStatusCondition(b.Status.Conditions, workv1alpha1.ConditionHealthy); c == nil || c.Status != metav1.ConditionFalse {
				return fmt.Errorf("Healthy %+v", c)
			}
			return nil
		})
	})

	t.Run("a Cluster's new labels bring the overrides that target them", func(t *testing.T) {
		create(t, &policyv1alpha1.OverridePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "gold"},
			Spec: policyv1alpha1.OverrideSpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: template.GetAPIVersion(), Kind: "Gizmo"}},
				OverrideRules: []policyv1alpha1.RuleWithCluster{{
					TargetCluster: &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}}},
					Overriders: policyv1alpha1.Overriders{LabelsOverrider: []policyv1alpha1.LabelAnnotationOverrider{
						{Operator: policyv1alpha1.OverriderOpAdd, Value: map[string]string{"tier": "gold"}}}},
				}},
			}})
		c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}}
		if err := env.Client.Patch(ctx, c, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"tier":"gold"}}}`))); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, hangGuard, "the override in the Work", func() error {
			if err := env.Client.Get(ctx, workKey, w); err != nil {
				return err
			}
			if w.Annotations[workv1alpha1.AnnotationOverrides] == "" || !strings.Contains(string(w.Spec.Workload.Manifests[0].Raw), `"tier":"gold"`) {
				return fmt.Errorf("annotations %v, manifest %s", w.Annotations, w.Spec.Workload.Manifests[0].Raw)
			}
			return nil
		})
		testenv.Eventually(t, hangGuard, "Overridden on the binding", func() error {
			if err := env.Client.Get(ctx, key, b); err != nil {
				return err
			}
			if !meta.IsStatusConditionTrue(b.Status.Conditions, workv1alpha1.ConditionOverridden) {
				return fmt.Errorf("conditions %+v", b.Status.Conditions)
			}
			return nil
		})
	})

	t.Run("each controller owns its conditions under its own field manager", func(t *testing.T) {
		if err := env.Client.Get(ctx, key, b); err != nil {
			t.Fatal(err)
		}
		status := workv1alpha1.ControllerFieldManager("binding-status")
		render := workv1alpha1.ControllerFieldManager("binding")
		fields := map[string]string{
			`k:{"type":"FullyApplied"}`: status,
			`k:{"type":"Healthy"}`:      status,
			`f:aggregatedStatus`:        status,
			`k:{"type":"Overridden"}`:   render,
		}
		for field, manager := range fields {
			var owners []string
			for _, e := range b.GetManagedFields() {
				if owns(e, field) {
					owners = append(owners, e.Manager+"/"+string(e.Operation))
				}
			}
			if want := []string{manager + "/" + string(metav1.ManagedFieldsOperationApply)}; !slices.Equal(owners, want) {
				t.Errorf("%s owned by %v, want %v", field, owners, want)
			}
		}
		// render is a prefix of both binding controllers' managers.
		for _, e := range b.GetManagedFields() {
			if strings.HasPrefix(e.Manager, render) && e.Operation != metav1.ManagedFieldsOperationApply {
				t.Errorf("%s wrote the binding by %s (subresource %q)", e.Manager, e.Operation, e.Subresource)
			}
			if e.Operation == metav1.ManagedFieldsOperationUpdate && e.Subresource == "" && e.Manager != bindingTestManager {
				t.Errorf("%s updated the whole binding: %s", e.Manager, e.FieldsV1.Raw)
			}
		}
	})

	t.Run("the scheduler's condition survives the status controller's writes", func(t *testing.T) {
		if err := env.Client.Get(ctx, key, b); err != nil {
			t.Fatal(err)
		}
		got := meta.FindStatusCondition(b.Status.Conditions, workv1alpha1.ConditionScheduled)
		if got == nil || got.Status != scheduled.Status || got.Reason != scheduled.Reason || !got.LastTransitionTime.Equal(&scheduled.LastTransitionTime) {
			t.Fatalf("Scheduled %+v, was %+v", got, scheduled)
		}
		for _, e := range b.GetManagedFields() {
			if strings.HasPrefix(e.Manager, workv1alpha1.ControllerFieldManager("binding")) && owns(e, `k:{"type":"Scheduled"}`) {
				t.Fatalf("%s claims the Scheduled condition", e.Manager)
			}
		}
	})

	t.Run("a released binding lets go of its Work, and of nothing else, by patches", func(t *testing.T) {
		const hold = "binding-test/hold" // keeps the binding readable once the controller let go of it
		for _, patch := range []string{
			`[{"op":"add","path":"/metadata/finalizers/-","value":"` + hold + `"}]`,
			`[{"op":"add","path":"/metadata/annotations","value":{"` + workv1alpha1.AnnotationRelease + `":"true"}}]`,
		} {
			if err := env.Client.Patch(ctx, b, client.RawPatch(types.JSONPatchType, []byte(patch))); err != nil {
				t.Fatal(err)
			}
		}
		if err := env.Client.Delete(ctx, b); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, hangGuard, "the Work kept its objects and was deleted", func() error {
			if err := env.Client.Get(ctx, workKey, w); err != nil {
				return err
			}
			if w.DeletionTimestamp == nil || w.Spec.PreserveResourcesOnDeletion == nil || !*w.Spec.PreserveResourcesOnDeletion {
				return fmt.Errorf("deleted %v, preserve %v", w.DeletionTimestamp, w.Spec.PreserveResourcesOnDeletion)
			}
			return nil
		})
		var owners []string
		for _, e := range w.GetManagedFields() {
			if owns(e, "f:preserveResourcesOnDeletion") {
				owners = append(owners, e.Manager)
			}
		}
		if want := []string{workv1alpha1.ControllerFieldManager("binding")}; !slices.Equal(owners, want) {
			t.Fatalf("preserveResourcesOnDeletion written by %v, want %v", owners, want)
		}
		// The agent lets go of the Work; then the controller of its finalizer, and only of its own.
		if err := env.Client.Patch(ctx, w, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, hangGuard, "the binding's finalizer gone", func() error {
			if err := env.Client.Get(ctx, key, b); err != nil {
				return err
			}
			if !slices.Equal(b.Finalizers, []string{hold}) {
				return fmt.Errorf("finalizers %v", b.Finalizers)
			}
			return nil
		})
		if err := env.Client.Patch(ctx, b, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))); err != nil {
			t.Fatal(err)
		}
		testenv.EventuallyGone(t, env.Client, b, hangGuard)
	})
}
