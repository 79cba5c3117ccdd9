package autoscaling

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	metricsclient "k8s.io/kubernetes/pkg/controller/podautoscaler/metrics"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

var epoch = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// pod is a running pod, ready for ten minutes, requesting cpu millicores.
func pod(name string, cpu int64) *corev1.Pod {
	started := metav1.NewTime(epoch.Add(-10 * time.Minute))
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(cpu, resource.DecimalSI)}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &started,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: started}}},
	}
}

func pending(name string, cpu int64) *corev1.Pod {
	p := pod(name, cpu)
	p.Status.Phase = corev1.PodPending
	return p
}

func sample(v int64) metricsclient.PodMetric {
	return metricsclient.PodMetric{Value: v, Timestamp: epoch, Window: time.Minute}
}

// TestResourceReplicas: the upstream utilization calculation over the fleet's pods, with its tolerance, and
// its treatment of missing and unready pods.
func TestResourceReplicas(t *testing.T) {
	tests := []struct {
		name      string
		pods      []*corev1.Pod
		usage     metricsclient.PodMetricsInfo
		current   int32
		target    int32
		want      int32
		wantUtil  int32
		wantError string
	}{
		{"three pods at 90% of a 30% target", []*corev1.Pod{pod("a/p1", 1000), pod("a/p2", 1000), pod("b/p1", 1000)},
			metricsclient.PodMetricsInfo{"a/p1": sample(900), "a/p2": sample(900), "b/p1": sample(900)}, 3, 30, 9, 90, ""},
		{"within the 10% tolerance", []*corev1.Pod{pod("a/p1", 1000), pod("b/p1", 1000)},
			metricsclient.PodMetricsInfo{"a/p1": sample(520), "b/p1": sample(520)}, 2, 50, 2, 52, ""},
		{"four pods at 10% of a 50% target", []*corev1.Pod{pod("a/p1", 1000), pod("a/p2", 1000), pod("b/p1", 1000), pod("b/p2", 1000)},
			metricsclient.PodMetricsInfo{"a/p1": sample(100), "a/p2": sample(100), "b/p1": sample(100), "b/p2": sample(100)}, 4, 50, 1, 10, ""},
		// Scale down with a pod without metrics: the missing pod counts as 100% of its request, ratio
		// (100+100+1000)/3000 = 0.4 of 50% → 0.8 → ceil(0.8*3) = 3, no change.
		{"a missing pod holds a scale-down back", []*corev1.Pod{pod("a/p1", 1000), pod("a/p2", 1000), pod("b/p1", 1000)},
			metricsclient.PodMetricsInfo{"a/p1": sample(100), "a/p2": sample(100)}, 3, 50, 3, 10, ""},
		// Scale up with a pending pod: it counts as 0, (800+800+0)/3000 = 53% of 50% → within tolerance.
		{"a pending pod holds a scale-up back", []*corev1.Pod{pod("a/p1", 1000), pod("b/p1", 1000), pending("b/p2", 1000)},
			metricsclient.PodMetricsInfo{"a/p1": sample(800), "b/p1": sample(800)}, 3, 50, 3, 80, ""},
		{"failed and deleted pods are ignored", []*corev1.Pod{pod("a/p1", 1000), func() *corev1.Pod {
			p := pod("b/p1", 1000)
			p.Status.Phase = corev1.PodFailed
			return p
		}()}, metricsclient.PodMetricsInfo{"a/p1": sample(1000), "b/p1": sample(0)}, 2, 50, 2, 100, ""},
		{"no pods", nil, metricsclient.PodMetricsInfo{}, 2, 50, 0, 0, "no pods of the target"},
		{"no metrics", []*corev1.Pod{pending("a/p1", 1000)}, metricsclient.PodMetricsInfo{}, 1, 50, 0, 0, "no metrics for the target's pods"},
		{"a container without a request", []*corev1.Pod{pod("a/p1", 1000), func() *corev1.Pod {
			p := pod("b/p1", 1000)
			p.Spec.Containers[0].Resources.Requests = nil
			return p
		}()}, metricsclient.PodMetricsInfo{"a/p1": sample(500), "b/p1": sample(500)}, 2, 50, 0, 0, "requests no cpu"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, util, _, err := ResourceReplicas(Fleet{Pods: tt.pods, Now: epoch}, tt.current, tt.target, corev1.ResourceCPU, "", tt.usage, Tolerances{DefaultTolerance, DefaultTolerance})
			if tt.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantError) {
					t.Fatalf("err = %v, want %q", err, tt.wantError)
				}
				return
			}
			if err != nil || got != tt.want || util != tt.wantUtil {
				t.Fatalf("= %d replicas at %d%% (%v), want %d at %d%%", got, util, err, tt.want, tt.wantUtil)
			}
		})
	}
}

// TestResourceReplicasCPUStartup: a pod in its CPU initialization period whose sample predates a full window
// after it became ready is unready; one that has never been ready is unready after its start delay.
func TestResourceReplicasCPUStartup(t *testing.T) {
	young := pod("a/young", 1000)
	young.Status.StartTime = &metav1.Time{Time: epoch.Add(-time.Minute)}
	young.Status.Conditions[0].LastTransitionTime = metav1.Time{Time: epoch.Add(-30 * time.Second)}
	usage := metricsclient.PodMetricsInfo{"a/old": sample(1000), "a/young": sample(1000)}
	// Only the old pod counts: 100% of a 50% target → ceil(2 × 1) = 2 among the ready; the young pod is
	// unready on a scale-up, counts as 0: (1000+0)/2000 = 50% → within tolerance → 2.
	got, _, _, err := ResourceReplicas(Fleet{Pods: []*corev1.Pod{pod("a/old", 1000), young}, Now: epoch}, 2, 50, corev1.ResourceCPU, "", usage, Tolerances{0.1, 0.1})
	if err != nil || got != 2 {
		t.Fatalf("= %d (%v), want 2", got, err)
	}
	// The same pod once ready for a full window counts: 100% of 50% → 4.
	young.Status.Conditions[0].LastTransitionTime = metav1.Time{Time: epoch.Add(-2 * time.Minute)}
	usage = metricsclient.PodMetricsInfo{"a/old": sample(1000), "a/young": sample(1000)}
	got, _, _, err = ResourceReplicas(Fleet{Pods: []*corev1.Pod{pod("a/old", 1000), young}, Now: epoch}, 2, 50, corev1.ResourceCPU, "", usage, Tolerances{0.1, 0.1})
	if err != nil || got != 4 {
		t.Fatalf("once ready for a window = %d (%v), want 4", got, err)
	}
}

// TestPlainReplicas: the upstream average-value calculation (Pods metrics, resource averageValue).
func TestPlainReplicas(t *testing.T) {
	pods := []*corev1.Pod{pod("a/p1", 1000), pod("b/p1", 1000)}
	got, avg, err := PlainReplicas(Fleet{Pods: pods, Now: epoch}, 2, 10000, "", metricsclient.PodMetricsInfo{"a/p1": sample(20000), "b/p1": sample(20000)}, Tolerances{0.1, 0.1})
	if err != nil || got != 4 || avg != 20000 {
		t.Fatalf("= %d at %d (%v), want 4 at 20000", got, avg, err)
	}
	// A missing pod on a scale-down counts as exactly the target: (2000+10000)/2 = 6000 of 10000 → 0.6 →
	// ceil(1.2) = 2, no change.
	got, _, err = PlainReplicas(Fleet{Pods: pods, Now: epoch}, 2, 10000, "", metricsclient.PodMetricsInfo{"a/p1": sample(2000)}, Tolerances{0.1, 0.1})
	if err != nil || got != 2 {
		t.Fatalf("with a missing pod = %d (%v), want 2", got, err)
	}
}

// members is a Source over fixed data: pod lists and samples by cluster, or an error for a cluster.
type members struct {
	pods    map[string][]corev1.Pod
	usage   map[string]metricsclient.PodMetricsInfo
	failing string
}

func (m members) Pods(_ context.Context, c *clusterv1alpha1.Cluster, _ string, _ labels.Selector) ([]corev1.Pod, error) {
	if c.Name == m.failing {
		return nil, errors.New("connection refused")
	}
	return m.pods[c.Name], nil
}

func (m members) ResourceUsage(_ context.Context, c *clusterv1alpha1.Cluster, _ string, _ labels.Selector, _ corev1.ResourceName, _ string) (metricsclient.PodMetricsInfo, error) {
	out := metricsclient.PodMetricsInfo{}
	for k, v := range m.usage[c.Name] {
		out[k] = v
	}
	return out, nil
}

func (m members) PodsMetric(context.Context, *clusterv1alpha1.Cluster, string, labels.Selector, string, labels.Selector) (metricsclient.PodMetricsInfo, error) {
	return nil, errors.New("no custom metrics")
}

// TestFleetReader: pods of the same name in two members are two pods; a member that cannot be read fails the
// whole computation rather than counting as a member without pods.
func TestFleetReader(t *testing.T) {
	src := members{
		pods:  map[string][]corev1.Pod{"member1": {*pod("web-0", 1000)}, "member2": {*pod("web-0", 1000)}},
		usage: map[string]metricsclient.PodMetricsInfo{"member1": {"web-0": sample(1000)}, "member2": {"web-0": sample(1000)}},
	}
	clusters := []*clusterv1alpha1.Cluster{{ObjectMeta: metav1.ObjectMeta{Name: "member1"}}, {ObjectMeta: metav1.ObjectMeta{Name: "member2"}}}
	r := fleetReader{source: src, clusters: clusters, namespace: "default", selector: labels.Everything()}
	f, err := r.pods(context.Background(), epoch)
	if err != nil || len(f.Pods) != 2 || f.Pods[0].Name != "member1/web-0" || f.Pods[1].Name != "member2/web-0" {
		t.Fatalf("pods = %v (%v)", f.Pods, err)
	}
	cpu := autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: new(int32(50))}}}
	p := r.propose(context.Background(), f, 2, cpu, Tolerances{0.1, 0.1})
	if p.err != nil || p.replicas != 4 || *p.status.Resource.Current.AverageUtilization != 100 {
		t.Fatalf("proposal = %+v, want 4 replicas at 100%%", p)
	}
	custom := autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: "rps"}, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: resource.NewQuantity(1, resource.DecimalSI)}}}
	if p := r.propose(context.Background(), f, 2, custom, Tolerances{0.1, 0.1}); p.err == nil || p.reason != "FailedGetPodsMetric" {
		t.Fatalf("a custom metric that cannot be read: %+v", p)
	}

	src.failing = "member2"
	r.source = src
	if _, err := r.pods(context.Background(), epoch); err == nil || !strings.Contains(err.Error(), "member2") {
		t.Fatalf("an unreachable member: %v", err)
	}
}
