package integration

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// TestAgentChangesOnlyStatusAndFinalizersOfItsWorks: an agent's role lets it update its Works so it can
// remove their finalizer, and nothing else: not the spec (what its cluster runs), not the labels (which
// binding it reports to), not an added finalizer.
func TestAgentChangesOnlyStatusAndFinalizersOfItsWorks(t *testing.T) {
	ctx := context.Background()
	agent, _ := join(t, env, "works-a", "id-works-a")
	work := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "flotilla-cluster-works-a",
		Labels: ownedWorkLabels(t, "flotilla-cluster-works-a", "w", nil), Finalizers: []string{workv1alpha1.FinalizerExecution}}}
	if err := env.Client.Create(ctx, work); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		controllerutil.RemoveFinalizer(work, workv1alpha1.FinalizerExecution)
		_ = env.Client.Update(ctx, work)
		_ = env.Client.Delete(ctx, work)
	})
	change := func(edit func(w *workv1alpha1.Work)) error {
		w := &workv1alpha1.Work{}
		if err := agent.Get(ctx, client.ObjectKeyFromObject(work), w); err != nil {
			return err
		}
		edit(w)
		return agent.Update(ctx, w)
	}
	for what, edit := range map[string]func(w *workv1alpha1.Work){
		"spec":        func(w *workv1alpha1.Work) { w.Spec.SuspendDispatching = ptr.To(true) },
		"labels":      func(w *workv1alpha1.Work) { w.Labels[workv1alpha1.LabelBindingName] = "other-deployment" },
		"annotations": func(w *workv1alpha1.Work) { w.Annotations = map[string]string{"a": "b"} },
		"finalizers":  func(w *workv1alpha1.Work) { w.Finalizers = append(w.Finalizers, "example.com/keep") },
	} {
		err := change(edit)
		if !apierrors.IsForbidden(err) {
			t.Errorf("the agent changed its Work's %s: %v", what, err)
		} else if !strings.Contains(err.Error(), "an agent may change only a Work's status and remove its finalizers") {
			t.Errorf("refusing a change of %s does not say why: %v", what, err)
		}
	}
	if err := agent.Status().Update(ctx, work); err != nil {
		t.Errorf("the agent cannot write its Work's status: %v", err)
	}
	if err := change(func(w *workv1alpha1.Work) { controllerutil.RemoveFinalizer(w, workv1alpha1.FinalizerExecution) }); err != nil {
		t.Fatalf("the agent cannot remove its Work's finalizer: %v", err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(work), work); err != nil || len(work.Finalizers) != 0 || work.Spec.SuspendDispatching != nil {
		t.Fatalf("work %v finalizers %v spec %+v", err, work.Finalizers, work.Spec)
	}
}
