package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/execution"
	"github.com/flotilla-io/flotilla/internal/scheme"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// TestExecutorFollowsMemberStatusByWatching: an executor runs as a controller, as in an agent, with the test
// hub as its member (which runs no Deployment controller, so a Deployment's status changes only when the test
// writes it). Nothing reads the Deployment back on a timer (the executor's resync is an hour) and nothing
// touches the Work: the Work's status still follows the Deployment's status as soon as it changes in the
// member, through the watch on what the executor applied. From creation to available the Work's status is
// written twice: applied (once the first status has been held for a second and the Deployment still does
// not move), and available.
func TestExecutorFollowsMemberStatusByWatching(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const worksNamespace = "exec-watch-works"
	ensureNamespace(t, worksNamespace)
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:  scheme.New(),
		Cache:   cache.Options{DefaultNamespaces: map[string]cache.Config{worksNamespace: {}}},
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	member, err := execution.NewMember(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	e := &execution.Executor{Hub: mgr.GetClient(), Resync: time.Hour, FieldManager: "test-executor",
		MemberFor: func(context.Context, string) (*execution.Member, error) { return member, nil }}
	member.WatchApplied(e.Notify)
	defer member.Stop()
	if err := e.SetupWithManager(mgr, "watch-test-execution", controller.Options{SkipNameValidation: ptr.To(true)}); err != nil {
		t.Fatal(err)
	}
	var stopped sync.WaitGroup
	stopped.Go(func() {
		if err := mgr.Start(ctx); err != nil {
			t.Error(err)
		}
	})
	defer stopped.Wait()
	defer cancel()

	// Count the writes of the Work from its creation until it is available.
	watcher, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	works, err := watcher.Watch(ctx, &workv1alpha1.WorkList{}, client.InNamespace(worksNamespace))
	if err != nil {
		t.Fatal(err)
	}
	defer works.Stop()
	untilAvailable := make(chan int, 1)
	go func() {
		writes := 0
		for ev := range works.ResultChan() {
			w, ok := ev.Object.(*workv1alpha1.Work)
			if ev.Type != watch.Modified || !ok {
				continue
			}
			if writes++; meta.IsStatusConditionTrue(w.Status.Conditions, workv1alpha1.WorkConditionAvailable) {
				untilAvailable <- writes
				return
			}
		}
	}()

	deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "exec-watch", Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(2)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1"}}}}}}
	w := createWork(t, worksNamespace, "web", nil, "", deployment)
	workIs := func(what string, check func(*workv1alpha1.Work) error) {
		t.Helper()
		testenv.Eventually(t, time.Minute, what, func() error {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
				return err
			}
			return check(w)
		})
	}
	workIs("the Deployment applied, not available", func(w *workv1alpha1.Work) error {
		if !meta.IsStatusConditionTrue(w.Status.Conditions, workv1alpha1.WorkConditionApplied) ||
			!meta.IsStatusConditionFalse(w.Status.Conditions, workv1alpha1.WorkConditionAvailable) {
			return fmt.Errorf("conditions %+v", w.Status.Conditions)
		}
		return nil
	})

	// The member's Deployment controller reports it available.
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(deployment), deployment); err != nil {
		t.Fatal(err)
	}
	deployment.Status = appsv1.DeploymentStatus{ObservedGeneration: deployment.Generation, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}
	if err := env.Client.Status().Update(ctx, deployment); err != nil {
		t.Fatal(err)
	}
	workIs("the Work available, with the member's status", func(w *workv1alpha1.Work) error {
		if !meta.IsStatusConditionTrue(w.Status.Conditions, workv1alpha1.WorkConditionAvailable) {
			return fmt.Errorf("conditions %+v", w.Status.Conditions)
		}
		if s := w.Status.ManifestStatuses[0]; s.Health != workv1alpha1.ResourceHealthy || s.Status == nil ||
			!strings.Contains(string(s.Status.Raw), `"availableReplicas":2`) {
			return fmt.Errorf("manifest status %+v", s)
		}
		return nil
	})
	for _, f := range w.ManagedFields {
		if f.Subresource == "status" && f.Manager != "test-executor" {
			t.Errorf("the Work's status was written by %s", f.Manager)
		}
	}
	if writes := <-untilAvailable; writes != 2 {
		t.Errorf("%d writes of the Work from creation to available, want 2: applied, available", writes)
	}

	deleteWork(t, w)
	testenv.EventuallyGone(t, env.Client, w, time.Minute)
	if present(t, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "exec-watch", Name: "web"}}) {
		t.Fatal("the Deployment stays after its Work was deleted")
	}
}
