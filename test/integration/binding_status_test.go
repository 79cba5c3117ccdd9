package integration

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// TestBindingFirstStatusIsAResult: a new binding whose Work only lists its object as about to be applied
// (the executor's intent) gets no summed status; the first one the status controller writes is the agent's
// result, applied and healthy, in one write of the binding. (TestBindingControllers shows the other side: a
// Work that reports nothing at all is summed as not applied once the grace is over.)
func TestBindingFirstStatusIsAResult(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	const namespace, cluster = "binding-first-status", "first-status-member"
	watcher, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	bindings, err := watcher.Watch(ctx, &workv1alpha1.ResourceBindingList{}, client.InNamespace(namespace))
	if err != nil {
		t.Fatal(err)
	}
	defer bindings.Stop()
	// Every version of the binding's FullyApplied condition, in order, until it is True.
	versions := make(chan []string, 1)
	go func() {
		var seen []string
		for ev := range bindings.ResultChan() {
			b, ok := ev.Object.(*workv1alpha1.ResourceBinding)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			c := meta.FindStatusCondition(b.Status.Conditions, workv1alpha1.ConditionFullyApplied)
			if c == nil {
				continue
			}
			if len(seen) == 0 || seen[len(seen)-1] != string(c.Status)+"/"+c.Reason {
				seen = append(seen, string(c.Status)+"/"+c.Reason)
			}
			if c.Status == metav1.ConditionTrue {
				versions <- seen
				return
			}
		}
	}()

	_, b := boundGizmo(t, namespace, cluster)
	w := &workv1alpha1.Work{}
	workKey := client.ObjectKey{Namespace: clusterv1alpha1.ClusterNamespace(cluster), Name: workv1alpha1.WorkName(b.Namespace, b.Name)}
	testenv.Eventually(t, hangGuard, "the Work rendered", func() error { return env.Client.Get(ctx, workKey, w) })
	w.Status.ManifestStatuses = []workv1alpha1.ManifestStatus{{Identifier: workv1alpha1.ResourceIdentifier{Version: "v1", Kind: "Gizmo", Namespace: namespace, Name: "g"},
		Health: workv1alpha1.ResourceUnknown, Conditions: []metav1.Condition{{Type: workv1alpha1.WorkConditionApplied, Status: metav1.ConditionUnknown,
			Reason: workv1alpha1.ManifestReasonApplying, Message: "about to be applied", LastTransitionTime: metav1.Now()}}}}
	if err := env.Client.Status().Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // ten status batches
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(b.Status.Conditions, workv1alpha1.ConditionFullyApplied); c != nil {
		t.Fatalf("the binding was summed while its Work was about to be applied: %+v", c)
	}
	reportStatus(t, w, workv1alpha1.ResourceHealthy, 1)
	select {
	case seen := <-versions:
		if len(seen) != 1 {
			t.Fatalf("FullyApplied went %v before True, want True at once", seen)
		}
	case <-ctx.Done():
		t.Fatal("FullyApplied never became True")
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
		t.Fatal(err)
	}
	if !meta.IsStatusConditionTrue(b.Status.Conditions, workv1alpha1.ConditionHealthy) {
		t.Fatalf("not Healthy with the first summed status: %+v", b.Status.Conditions)
	}
}
