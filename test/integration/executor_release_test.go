package integration

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/execution"
)

// flotillaKeys lists the work.flotilla.io/ labels and annotations the member object obj carries now.
func flotillaKeys(t *testing.T, obj client.Object) []string {
	t.Helper()
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, m := range []map[string]string{obj.GetLabels(), obj.GetAnnotations()} {
		for k := range m {
			if strings.HasPrefix(k, workv1alpha1.KeyPrefix) {
				keys = append(keys, k)
			}
		}
	}
	return keys
}

// TestExecutorReleasesWhatItPreserves: a deleted Work that preserves its objects (preserveResourcesOnDeletion,
// also set on the Works of a released template) leaves them running in the member, plainly unmanaged: without
// any work.flotilla.io/ label or annotation, the template's own or the executor's, and with everything else
// they had. An object of the Work's that another hub marked keeps its marks.
func TestExecutorReleasesWhatItPreserves(t *testing.T) {
	ctx := context.Background()
	e := newExecutor(t, env.Client, nil)
	theirs := newExecutor(t, env.Client, nil)
	theirs.HubID = "another-hub"
	other := createWork(t, "exec-works", "preserved-elsewhere", nil, "", annotatedConfigMap("exec-preserved", "theirs", nil))
	if _, err := reconcile(t, theirs, other); err != nil {
		t.Fatal(err)
	}

	d := retainDeployment("exec-preserved", "web", 2, map[string]string{"app": "web", workv1alpha1.LabelRetainReplicas: "true"})
	d.Annotations = map[string]string{"team": "a", workv1alpha1.AnnotationTemplateGeneration: "4",
		workv1alpha1.AnnotationDeletionPolicy: workv1alpha1.DeletionPolicyDelete}
	w := createWork(t, "exec-works", "preserved", nil, "", d, annotatedConfigMap("exec-preserved", "theirs", nil))
	patch := client.MergeFrom(w.DeepCopy())
	w.Spec.PreserveResourcesOnDeletion = ptr.To(true)
	if err := env.Client.Patch(ctx, w, patch); err != nil {
		t.Fatal(err)
	}
	w, err := reconcile(t, e, w)
	if err != nil {
		t.Fatal(err)
	}
	wantCondition(t, w, "web", execution.ReasonApplied)
	applied := &appsv1.Deployment{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(d), applied); err != nil {
		t.Fatal(err)
	}
	if len(flotillaKeys(t, applied.DeepCopy())) < 4 {
		t.Fatalf("the applied Deployment carries %v, want Flotilla's mark and the template's keys", flotillaKeys(t, applied.DeepCopy()))
	}
	theirsMarks := flotillaKeys(t, annotatedConfigMap("exec-preserved", "theirs", nil))

	deleteWork(t, w)
	if w, err := reconcile(t, e, w); err != nil || w != nil {
		t.Fatalf("finalize: %v, Work %v", err, w)
	}
	kept := &appsv1.Deployment{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(d), kept); err != nil || kept.UID != applied.UID || kept.DeletionTimestamp != nil {
		t.Fatalf("the preserved Deployment (%v) was deleted or replaced", err)
	}
	if keys := flotillaKeys(t, kept); len(keys) > 0 {
		t.Fatalf("the preserved Deployment still carries %v", keys)
	}
	if kept.Labels["app"] != "web" || kept.Annotations["team"] != "a" || ptr.Deref(kept.Spec.Replicas, 0) != 2 {
		t.Fatalf("the preserved Deployment lost what is not Flotilla's: labels %v, annotations %v, replicas %v",
			kept.Labels, kept.Annotations, kept.Spec.Replicas)
	}
	if got := flotillaKeys(t, annotatedConfigMap("exec-preserved", "theirs", nil)); len(got) != len(theirsMarks) {
		t.Fatalf("releasing this hub's Work changed another hub's object: %v, was %v", got, theirsMarks)
	}
}
