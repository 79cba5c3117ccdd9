package autoscaling

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	metricsclient "k8s.io/kubernetes/pkg/controller/podautoscaler/metrics"
	custommetricsv1beta2 "k8s.io/metrics/pkg/apis/custom_metrics/v1beta2"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/proxy"
)

// Source reads a target's pods and their metrics in one member. Pod names are the member's own; the caller
// qualifies them with the cluster.
type Source interface {
	// Pods lists the pods selector picks in namespace.
	Pods(ctx context.Context, cluster *clusterv1alpha1.Cluster, namespace string, selector labels.Selector) ([]corev1.Pod, error)
	// ResourceUsage is each pod's usage of resource (milli-units) from metrics.k8s.io: summed over its
	// containers, or the one named; a pod with a container that reports no such usage has no sample.
	ResourceUsage(ctx context.Context, cluster *clusterv1alpha1.Cluster, namespace string, selector labels.Selector, resource corev1.ResourceName, container string) (metricsclient.PodMetricsInfo, error)
	// PodsMetric is each pod's value (milli-units) of a custom metric from custom.metrics.k8s.io.
	PodsMetric(ctx context.Context, cluster *clusterv1alpha1.Cluster, namespace string, selector labels.Selector, metric string, metricSelector labels.Selector) (metricsclient.PodMetricsInfo, error)
}

// defaultMetricWindow is the window upstream assumes for a custom metric that does not give one.
const defaultMetricWindow = time.Minute

// Members is the Source that reaches members through the hub's member access, as the proxy does: stored
// credentials for Push members, the tunnel for Pull ones. It reads as the hub, not as a user.
type Members struct {
	Backends proxy.Backends
}

var _ Source = Members{}

// client returns a REST client of the member's API server.
func (m Members) client(ctx context.Context, cluster *clusterv1alpha1.Cluster) (*kubernetes.Clientset, error) {
	target, err := m.Backends.For(ctx, cluster)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(&rest.Config{Host: target.URL.String(), Transport: target.Transport, Timeout: 30 * time.Second})
}

// Pods implements Source.
func (m Members) Pods(ctx context.Context, cluster *clusterv1alpha1.Cluster, namespace string, selector labels.Selector) ([]corev1.Pod, error) {
	kube, err := m.client(ctx, cluster)
	if err != nil {
		return nil, err
	}
	list, err := kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// ResourceUsage implements Source.
func (m Members) ResourceUsage(ctx context.Context, cluster *clusterv1alpha1.Cluster, namespace string, selector labels.Selector, resource corev1.ResourceName, container string) (metricsclient.PodMetricsInfo, error) {
	kube, err := m.client(ctx, cluster)
	if err != nil {
		return nil, err
	}
	list := &metricsv1beta1.PodMetricsList{}
	raw, err := kube.Discovery().RESTClient().Get().
		AbsPath("/apis/metrics.k8s.io/v1beta1/namespaces", namespace, "pods").
		Param("labelSelector", selector.String()).DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("resource metrics (metrics.k8s.io): %w", err)
	}
	if err := json.Unmarshal(raw, list); err != nil {
		return nil, fmt.Errorf("resource metrics (metrics.k8s.io): %w", err)
	}
	return UsageOf(list.Items, resource, container), nil
}

// UsageOf sums each pod's usage of resource as upstream's metrics client does: over its containers, or only
// the one named; a pod missing a container's usage has no sample.
func UsageOf(items []metricsv1beta1.PodMetrics, resource corev1.ResourceName, container string) metricsclient.PodMetricsInfo {
	out := metricsclient.PodMetricsInfo{}
	for _, pm := range items {
		var sum int64
		complete, found := true, false
		for _, c := range pm.Containers {
			if container != "" && c.Name != container {
				continue
			}
			q, ok := c.Usage[resource]
			if !ok {
				complete = false
				break
			}
			sum += q.MilliValue()
			found = true
		}
		if complete && found {
			out[pm.Name] = metricsclient.PodMetric{Timestamp: pm.Timestamp.Time, Window: pm.Window.Duration, Value: sum}
		}
	}
	return out
}

// PodsMetric implements Source.
func (m Members) PodsMetric(ctx context.Context, cluster *clusterv1alpha1.Cluster, namespace string, selector labels.Selector, metric string, metricSelector labels.Selector) (metricsclient.PodMetricsInfo, error) {
	kube, err := m.client(ctx, cluster)
	if err != nil {
		return nil, err
	}
	req := kube.Discovery().RESTClient().Get().
		AbsPath("/apis/custom.metrics.k8s.io/v1beta2/namespaces", namespace, "pods", custommetricsv1beta2.AllObjects, metric).
		Param("labelSelector", selector.String())
	if metricSelector != nil && !metricSelector.Empty() {
		req = req.Param("metricLabelSelector", metricSelector.String())
	}
	raw, err := req.DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("custom metric %s (custom.metrics.k8s.io): %w", metric, err)
	}
	list := &custommetricsv1beta2.MetricValueList{}
	if err := json.Unmarshal(raw, list); err != nil {
		return nil, fmt.Errorf("custom metric %s (custom.metrics.k8s.io): %w", metric, err)
	}
	out := metricsclient.PodMetricsInfo{}
	for _, v := range list.Items {
		window := defaultMetricWindow
		if v.WindowSeconds != nil {
			window = time.Duration(*v.WindowSeconds) * time.Second
		}
		out[v.DescribedObject.Name] = metricsclient.PodMetric{Timestamp: v.Timestamp.Time, Window: window, Value: v.Value.MilliValue()}
	}
	return out, nil
}
