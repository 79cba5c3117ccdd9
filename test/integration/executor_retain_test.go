package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/execution"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

func retainDeployment(namespace, name string, replicas int32, labels map[string]string) *appsv1.Deployment {
	pod := map[string]string{"app": name}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: pod},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: pod},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}}}}}
}

// setWorkload replaces the Work's manifests, as the binding controller does when the template changes.
func setWorkload(t *testing.T, w *workv1alpha1.Work, objs ...client.Object) *workv1alpha1.Work {
	t.Helper()
	current := &workv1alpha1.Work{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(w), current); err != nil {
		t.Fatal(err)
	}
	current.Spec.Workload.Manifests = nil
	for _, o := range objs {
		current.Spec.Workload.Manifests = append(current.Spec.Workload.Manifests, manifest(t, o))
	}
	if err := env.Client.Update(context.Background(), current); err != nil {
		t.Fatal(err)
	}
	return current
}

// scaleInMember sets the member Deployment's replicas as a member-side controller would, under its own
// field manager.
func scaleInMember(t *testing.T, d *appsv1.Deployment, replicas int32) {
	t.Helper()
	patch := []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas))
	err := env.Client.Patch(context.Background(), retainDeployment(d.Namespace, d.Name, 0, nil), client.RawPatch("application/merge-patch+json", patch),
		client.FieldOwner("autoscaler-in-member"))
	if err != nil {
		t.Fatal(err)
	}
}

func memberReplicas(t *testing.T, d *appsv1.Deployment) int32 {
	t.Helper()
	got := &appsv1.Deployment{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(d), got); err != nil {
		t.Fatal(err)
	}
	return ptr.Deref(got.Spec.Replicas, -1)
}

func applyWork(t *testing.T, e *execution.Executor, w *workv1alpha1.Work) {
	t.Helper()
	if _, err := reconcile(t, e, w); err != nil {
		t.Fatal(err)
	}
}

// TestExecutorLeavesRetainedReplicasToTheMember: a Deployment labelled to retain replicas (with Flotilla's
// label or Karmada's), or whose manifest lists spec.replicas among the fields its kind's customization
// retains, is created with the template's count, and afterwards its member count stays: when the
// template's count changes and nobody else owns the field yet (server-side apply would otherwise remove it
// and the Deployment fall back to 1 replica), and when a member-side manager scaled it.
func TestExecutorLeavesRetainedReplicasToTheMember(t *testing.T) {
	for _, c := range []struct {
		name                string
		labels, annotations map[string]string
	}{
		{name: "flotilla", labels: map[string]string{workv1alpha1.LabelRetainReplicas: "true"}},
		{name: "karmada", labels: map[string]string{workv1alpha1.LabelKarmadaRetainReplicas: "true"}},
		{name: "customization", annotations: map[string]string{workv1alpha1.AnnotationRetainedFields: "spec.paused,spec.replicas"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ns := "exec-retain"
			retained := func(replicas int32) *appsv1.Deployment {
				d := retainDeployment(ns, c.name, replicas, c.labels)
				d.Annotations = c.annotations
				return d
			}
			e := newExecutor(t, env.Client, nil)
			d := retained(2)
			w := createWork(t, "exec-works", "retain-"+c.name, nil, "", d)
			applyWork(t, e, w)
			if got := memberReplicas(t, d); got != 2 {
				t.Fatalf("created with %d replicas, want the template's 2", got)
			}

			w = setWorkload(t, w, retained(5))
			applyWork(t, e, w)
			if got := memberReplicas(t, d); got != 2 {
				t.Fatalf("after the template went to 5 replicas the member has %d, want its own 2", got)
			}

			scaleInMember(t, d, 7)
			applyWork(t, e, w)
			w = setWorkload(t, w, retained(6))
			applyWork(t, e, w)
			if got := memberReplicas(t, d); got != 7 {
				t.Fatalf("after a member-side scale to 7 the member has %d", got)
			}
			member := &appsv1.Deployment{}
			if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(d), member); err != nil ||
				member.Annotations[workv1alpha1.AnnotationRetainedFields] != "" {
				t.Fatalf("the member object carries the hub's list of retained fields: %v %v", err, member.Annotations)
			}

			// Without the label or annotation, the template's count is applied again.
			w = setWorkload(t, w, retainDeployment(ns, c.name, 3, nil))
			applyWork(t, e, w)
			if got := memberReplicas(t, d); got != 3 {
				t.Fatalf("without retention the member has %d replicas, want the template's 3", got)
			}
		})
	}
}

// TestExecutorLeavesAutoscaledReplicasToTheMember: a Deployment a HorizontalPodAutoscaler in the member
// targets keeps its member count, before the autoscaler scaled it (when only Flotilla owns the field) and
// after; once the autoscaler is gone, the template's count is applied again. An autoscaler of a kind of
// the same name in another group changes nothing.
func TestExecutorLeavesAutoscaledReplicasToTheMember(t *testing.T) {
	ctx := context.Background()
	ns := "exec-hpa"
	ensureNamespace(t, ns)
	hpa := func(name, apiVersion, target string) *autoscalingv2.HorizontalPodAutoscaler {
		return &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: ptr.To[int32](1), MaxReplicas: 10,
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: apiVersion, Kind: "Deployment", Name: target},
				Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
					Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](80)}}}}}}
	}
	// Both exist before the executor first applies, so its cache of autoscalers, filled then, has them.
	scaler := hpa("web", "apps/v1", "web")
	for _, h := range []*autoscalingv2.HorizontalPodAutoscaler{scaler, hpa("other-group", "example.com/v1", "api")} {
		if err := env.Client.Create(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	e := newExecutor(t, env.Client, nil)
	web, api := retainDeployment(ns, "web", 2, nil), retainDeployment(ns, "api", 2, nil)
	w := createWork(t, "exec-works", "hpa-web", nil, "", web, api)
	applyWork(t, e, w)
	if got := memberReplicas(t, web); got != 2 {
		t.Fatalf("created with %d replicas, want the template's 2", got)
	}

	w = setWorkload(t, w, retainDeployment(ns, "web", 5, nil), retainDeployment(ns, "api", 5, nil))
	applyWork(t, e, w)
	if got := memberReplicas(t, web); got != 2 {
		t.Fatalf("after the template went to 5 replicas the autoscaled Deployment has %d, want its own 2", got)
	}
	if got := memberReplicas(t, api); got != 5 {
		t.Fatalf("the Deployment no autoscaler targets has %d replicas, want the template's 5", got)
	}

	scaleInMember(t, web, 4)
	applyWork(t, e, w)
	if got := memberReplicas(t, web); got != 4 {
		t.Fatalf("after the autoscaler scaled to 4 the member has %d", got)
	}

	if err := env.Client.Delete(ctx, scaler); err != nil {
		t.Fatal(err)
	}
	replicas := int32(5)
	testenv.Eventually(t, 30*time.Second, "the template's count applied once the autoscaler is gone", func() error {
		replicas++
		w = setWorkload(t, w, retainDeployment(ns, "web", replicas, nil), retainDeployment(ns, "api", 5, nil))
		applyWork(t, e, w)
		if got := memberReplicas(t, web); got != replicas {
			return fmt.Errorf("the member has %d replicas, want %d", got, replicas)
		}
		return nil
	})
}

// TestExecutorWaitsWhenItCannotTellAnAutoscaler: when the member's HorizontalPodAutoscalers cannot be
// listed, the executor does not apply a Deployment's replicas over the member's (an autoscaler may own
// them): the manifest is ApplyFailed and says why, the member keeps its count, and the Work's other objects
// are applied.
func TestExecutorWaitsWhenItCannotTellAnAutoscaler(t *testing.T) {
	ns := "exec-hpa-forbidden"
	d := retainDeployment(ns, "web", 2, nil)
	w := createWork(t, "exec-works", "hpa-forbidden", nil, "", d)
	applyWork(t, newExecutor(t, env.Client, nil), w)
	scaleInMember(t, d, 4)

	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) {
			if strings.Contains(r.URL.Path, "/horizontalpodautoscalers") {
				body := `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,"message":"forbidden"}`
				return &http.Response{StatusCode: http.StatusForbidden, Header: http.Header{"Content-Type": {"application/json"}},
					Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
			}
			return rt.RoundTrip(r)
		})
	})
	w = setWorkload(t, w, retainDeployment(ns, "web", 3, nil), annotatedConfigMap(ns, "config", nil))
	w, _ = reconcile(t, newExecutor(t, env.Client, cfg), w)
	if got := memberReplicas(t, d); got != 4 {
		t.Fatalf("the member has %d replicas, want its own 4", got)
	}
	if c := manifestCondition(w, "web"); c == nil || c.Reason != execution.ReasonApplyFailed || !strings.Contains(c.Message, "HorizontalPodAutoscaler") {
		t.Fatalf("manifest condition %+v, want ApplyFailed naming the autoscalers", c)
	}
	if c := manifestCondition(w, "config"); c == nil || !meta.IsStatusConditionTrue([]metav1.Condition{*c}, workv1alpha1.WorkConditionApplied) {
		t.Fatalf("the ConfigMap's condition %+v, want applied", c)
	}
}
