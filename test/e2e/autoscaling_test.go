package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1alpha1 "github.com/flotilla-io/flotilla/api/autoscaling/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// metricsAPI is a small metrics.k8s.io served by the test for one member, registered in the member's
// aggregator: every running pod of the member uses cpu millicores in each container, as of now.
type metricsAPI struct {
	member *framework.Cluster
	cpu    atomic.Int64
}

const metricsGroupVersion = "metrics.k8s.io/v1beta1"

func (m *metricsAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimSuffix(r.URL.Path, "/")
	rest, ok := strings.CutPrefix(path, "/apis/"+metricsGroupVersion)
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if rest == "" {
		_ = json.NewEncoder(w).Encode(&metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: metricsGroupVersion,
			APIResources: []metav1.APIResource{{Name: "pods", Namespaced: true, Kind: "PodMetrics", Verbs: []string{"get", "list"}}},
		})
		return
	}
	parts := strings.Split(strings.TrimPrefix(rest, "/"), "/")
	if len(parts) != 3 || parts[0] != "namespaces" || parts[2] != "pods" {
		http.NotFound(w, r)
		return
	}
	pods, err := m.member.Kube.CoreV1().Pods(parts[1]).List(r.Context(), metav1.ListOptions{LabelSelector: r.URL.Query().Get("labelSelector")})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	list := &metricsv1beta1.PodMetricsList{TypeMeta: metav1.TypeMeta{Kind: "PodMetricsList", APIVersion: metricsGroupVersion}}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning {
			continue
		}
		pm := metricsv1beta1.PodMetrics{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
			Timestamp: metav1.Now(), Window: metav1.Duration{Duration: time.Second}}
		for _, c := range p.Spec.Containers {
			pm.Containers = append(pm.Containers, metricsv1beta1.ContainerMetrics{Name: c.Name, Usage: corev1.ResourceList{
				corev1.ResourceCPU: *resource.NewMilliQuantity(m.cpu.Load(), resource.DecimalSI)}})
		}
		list.Items = append(list.Items, pm)
	}
	_ = json.NewEncoder(w).Encode(list)
}

// serveMetrics starts a metricsAPI for member and registers it as the member's metrics.k8s.io: an
// APIService whose Service is an ExternalName for 127.0.0.1, which the member's aggregator dials at the
// APIService's port. Both go when the test ends, before the server stops.
func serveMetrics(t *testing.T, member *framework.Cluster, cpu int64) *metricsAPI {
	t.Helper()
	ctx := context.Background()
	api := &metricsAPI{member: member}
	api.cpu.Store(cpu)
	server := httptest.NewTLSServer(api)
	t.Cleanup(server.Close)
	u, err := url.Parse(server.URL)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	const name = "flotilla-e2e-metrics"
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "127.0.0.1",
			Ports: []corev1.ServicePort{{Port: int32(port), TargetPort: intstr.FromInt32(int32(port))}}}}
	if _, err := member.Kube.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	aggregator, err := aggregatorclient.NewForConfig(member.Config)
	if err != nil {
		t.Fatal(err)
	}
	apiService := &apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: "v1beta1.metrics.k8s.io"},
		Spec: apiregistrationv1.APIServiceSpec{Group: "metrics.k8s.io", Version: "v1beta1", InsecureSkipTLSVerify: true,
			GroupPriorityMinimum: 100, VersionPriority: 100,
			Service: &apiregistrationv1.ServiceReference{Namespace: svc.Namespace, Name: name, Port: ptr.To(int32(port))}}}
	if _, err := aggregator.ApiregistrationV1().APIServices().Create(ctx, apiService, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := aggregator.ApiregistrationV1().APIServices().Delete(ctx, apiService.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
		if err := member.Kube.CoreV1().Services(svc.Namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	})
	testenv.Eventually(t, time.Minute, member.Name+"'s metrics.k8s.io available", func() error {
		got, err := aggregator.ApiregistrationV1().APIServices().Get(ctx, apiService.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiregistrationv1.Available && c.Status == apiregistrationv1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("not Available: %+v", got.Status.Conditions)
	})
	return api
}

// templateReplicas waits until the hub's Deployment template has want replicas.
func templateReplicas(t *testing.T, f *fleet, name string, want int32, within time.Duration) {
	t.Helper()
	testenv.Eventually(t, within, fmt.Sprintf("template %s at %d replicas", name, want), func() error {
		d, err := f.hub.Kube.AppsV1().Deployments(f.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got := ptr.Deref(d.Spec.Replicas, 1); got != want {
			return fmt.Errorf("%d replicas", got)
		}
		return nil
	})
}

// TestFederatedHPAScalesAcrossTheFleet: a Deployment divided over a Pull member (m1, read through its tunnel)
// and a Push member (m3, with the stored credential) is scaled by a FederatedHPA on its pods' CPU, which the
// members' metrics.k8s.io (served by the test) reports: when the pods use twice their target the template
// goes from 2 to 4 replicas within the scale-up policy's period and a sync, the placement divides them (2 and
// 2), at the target it stays there, and when they use a fifth it comes back down to minReplicas after the scale-down window. Each scale is
// an event on the FederatedHPA, and `flotilla get fhpa` lists it. Then a CronFederatedHPA raises the FederatedHPA's minReplicas to 3 at the
// next minute, and the template follows; at the same time another sets a template's replicas itself.
func TestFederatedHPAScalesAcrossTheFleet(t *testing.T) {
	ctx := context.Background()
	f := useFleet(t)
	m1Metrics, m3Metrics := serveMetrics(t, f.m1, 100), serveMetrics(t, f.m3, 100)

	d := deployment(f.ns, "web", 2)
	d.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
	f.createDeployment(t, d)
	placement := placementOn("m1", "m3")
	placement.ReplicaScheduling = &policyv1alpha1.ReplicaSchedulingStrategy{
		ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingDivided, ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionWeighted}
	f.createPolicy(t, "web", deploymentSelector("web"), placement)
	waitPlaced(t, f.ns, "web", map[*framework.Cluster]int32{f.m1: 1, f.m3: 1})

	// Twice the 50% target: 4 replicas. Up by at most 2 pods per 15 s, no window; down after 15 s.
	fhpa := &autoscalingv1alpha1.FederatedHPA{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: f.ns},
		Spec: autoscalingv1alpha1.FederatedHPASpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr.To[int32](2), MaxReplicas: 6,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](50)}}}},
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleUp: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](0),
					Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 2, PeriodSeconds: 15}}},
				ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](15),
					Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}}},
			},
		},
	}
	start := time.Now()
	if err := f.hub.Client.Create(ctx, fhpa); err != nil {
		t.Fatal(err)
	}
	templateReplicas(t, f, "web", 4, 45*time.Second)
	t.Logf("scaled up to 4 in %s", time.Since(start).Round(time.Second))
	// On target now, so 4 it stays (at twice the target the next sync would go on to 6).
	m1Metrics.cpu.Store(50)
	m3Metrics.cpu.Store(50)
	waitPlaced(t, f.ns, "web", map[*framework.Cluster]int32{f.m1: 2, f.m3: 2})
	testenv.Eventually(t, 30*time.Second, "the FederatedHPA's status", func() error {
		got := &autoscalingv1alpha1.FederatedHPA{}
		if err := f.hub.Client.Get(ctx, client.ObjectKeyFromObject(fhpa), got); err != nil {
			return err
		}
		s := got.Status
		if s.CurrentReplicas != 4 || s.DesiredReplicas != 4 || s.LastScaleTime == nil || len(s.CurrentMetrics) != 1 || s.CurrentMetrics[0].Resource == nil ||
			s.CurrentMetrics[0].Resource.Current.AverageUtilization == nil {
			return fmt.Errorf("status %+v", s)
		}
		for _, c := range s.Conditions {
			if c.Type == autoscalingv2.ScalingActive && c.Status != corev1.ConditionTrue {
				return fmt.Errorf("ScalingActive %s: %s", c.Reason, c.Message)
			}
		}
		return nil
	})

	if out := f.hub.Flotilla("get", "fhpa", "-n", f.ns); !strings.Contains(out, "web") || !strings.Contains(out, "REPLICAS") {
		t.Errorf("flotilla get fhpa:\n%s", out)
	}

	// A fifth of the target: down to minReplicas once the 15 s window has passed.
	m1Metrics.cpu.Store(10)
	m3Metrics.cpu.Store(10)
	start = time.Now()
	templateReplicas(t, f, "web", 2, 60*time.Second)
	t.Logf("scaled down to 2 in %s", time.Since(start).Round(time.Second))
	testenv.Eventually(t, 30*time.Second, "an event for each scale", func() error {
		events, err := f.hub.Kube.EventsV1().Events(f.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		var notes []string
		for _, e := range events.Items {
			if e.Regarding.Kind == "FederatedHPA" && e.Reason == "SuccessfulRescale" {
				notes = append(notes, e.Note)
			}
		}
		joined := strings.Join(notes, "; ")
		if !strings.Contains(joined, "New size: 4; reason: cpu resource utilization (percentage of request) above target") ||
			!strings.Contains(joined, "New size: 2; reason: All metrics below target") {
			return fmt.Errorf("events: %s", joined)
		}
		return nil
	})

	// At the next minute (at least 10 s ahead), the CronFederatedHPA sets the FederatedHPA's minReplicas to 3.
	now := time.Now().UTC()
	at := now.Truncate(time.Minute).Add(time.Minute)
	if at.Sub(now) < 10*time.Second {
		at = at.Add(time.Minute)
	}
	cron := &autoscalingv1alpha1.CronFederatedHPA{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: f.ns},
		Spec: autoscalingv1alpha1.CronFederatedHPASpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: autoscalingv1alpha1.GroupVersion.String(), Kind: "FederatedHPA", Name: "web"},
			Rules: []autoscalingv1alpha1.CronFederatedHPARule{{Name: "peak", Schedule: fmt.Sprintf("%d %d * * *", at.Minute(), at.Hour()),
				TimeZone: ptr.To("Etc/UTC"), TargetMinReplicas: ptr.To[int32](3)}},
		},
	}
	if err := f.hub.Client.Create(ctx, cron); err != nil {
		t.Fatal(err)
	}
	// At the same time another sets a template without a FederatedHPA to 3 replicas.
	f.createDeployment(t, deployment(f.ns, "batch", 1))
	batch := cron.DeepCopy()
	batch.ObjectMeta = metav1.ObjectMeta{Name: "batch", Namespace: f.ns}
	batch.Spec.ScaleTargetRef = autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "batch"}
	batch.Spec.Rules[0].TargetMinReplicas, batch.Spec.Rules[0].TargetReplicas = nil, ptr.To[int32](3)
	if err := f.hub.Client.Create(ctx, batch); err != nil {
		t.Fatal(err)
	}
	ran := func(c *autoscalingv1alpha1.CronFederatedHPA, applied func(autoscalingv1alpha1.SuccessfulExecution) *int32) func() error {
		return func() error {
			got := &autoscalingv1alpha1.CronFederatedHPA{}
			if err := f.hub.Client.Get(ctx, client.ObjectKeyFromObject(c), got); err != nil {
				return err
			}
			if len(got.Status.ExecutionHistories) != 1 || len(got.Status.ExecutionHistories[0].SuccessfulExecutions) != 1 {
				return fmt.Errorf("%s: status %+v", c.Name, got.Status)
			}
			run := got.Status.ExecutionHistories[0].SuccessfulExecutions[0]
			if !run.ScheduleTime.Time.Equal(at) || ptr.Deref(applied(run), 0) != 3 || run.ExecutionTime.Time.Before(at) {
				return fmt.Errorf("%s: run %+v, want at %s", c.Name, run, at)
			}
			return nil
		}
	}
	testenv.Eventually(t, time.Until(at)+30*time.Second, "the FederatedHPA rule's run",
		ran(cron, func(e autoscalingv1alpha1.SuccessfulExecution) *int32 { return e.AppliedMinReplicas }))
	testenv.Eventually(t, 30*time.Second, "the template rule's run",
		ran(batch, func(e autoscalingv1alpha1.SuccessfulExecution) *int32 { return e.AppliedReplicas }))
	templateReplicas(t, f, "web", 3, 30*time.Second)
	templateReplicas(t, f, "batch", 3, 5*time.Second)
}
