package autoscaling

import (
	"context"
	"fmt"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	metricsclient "k8s.io/kubernetes/pkg/controller/podautoscaler/metrics"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// defaultMetrics is what an autoscaler without metrics follows, as upstream: 80% average CPU utilization.
var defaultMetrics = []autoscalingv2.MetricSpec{{
	Type: autoscalingv2.ResourceMetricSourceType,
	Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{
		Type: autoscalingv2.UtilizationMetricType, AverageUtilization: new(int32(80))}},
}}

// fleetReader reads a target's pods and metrics in the members it is placed in, and names each pod
// "cluster/pod".
type fleetReader struct {
	source    Source
	clusters  []*clusterv1alpha1.Cluster
	namespace string
	selector  labels.Selector
}

func qualified(cluster, pod string) string { return cluster + "/" + pod }

// pods lists the target's pods in every member. One member that cannot be read fails the whole: its pods
// are unknown, not absent.
func (r fleetReader) pods(ctx context.Context, now time.Time) (Fleet, error) {
	f := Fleet{Now: now}
	for _, c := range r.clusters {
		pods, err := r.source.Pods(ctx, c, r.namespace, r.selector)
		if err != nil {
			return Fleet{}, fmt.Errorf("pods in %s: %w", c.Name, err)
		}
		for i := range pods {
			p := pods[i].DeepCopy()
			p.Name = qualified(c.Name, p.Name)
			f.Pods = append(f.Pods, p)
		}
	}
	return f, nil
}

// samples reads one metric in every member, under qualified pod names.
func (r fleetReader) samples(ctx context.Context, read func(*clusterv1alpha1.Cluster) (metricsclient.PodMetricsInfo, error)) (metricsclient.PodMetricsInfo, error) {
	out := metricsclient.PodMetricsInfo{}
	for _, c := range r.clusters {
		got, err := read(c)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.Name, err)
		}
		for name, s := range got {
			out[qualified(c.Name, name)] = s
		}
	}
	return out, nil
}

// proposal is one metric's replica count and status, or why there is none (reason is the condition's).
type proposal struct {
	replicas int32
	name     string
	status   autoscalingv2.MetricStatus
	reason   string
	err      error
}

// propose computes one metric's replica count over the fleet, as upstream's computeReplicasForMetric.
func (r fleetReader) propose(ctx context.Context, f Fleet, current int32, spec autoscalingv2.MetricSpec, tol Tolerances) proposal {
	switch spec.Type {
	case autoscalingv2.ResourceMetricSourceType:
		if spec.Resource == nil {
			return proposal{reason: "InvalidMetricSourceType", err: fmt.Errorf("metric of type Resource has no resource")}
		}
		p := r.resource(ctx, f, current, spec.Resource.Name, "", spec.Resource.Target, tol)
		if p.err != nil {
			p.reason = "FailedGetResourceMetric"
			return p
		}
		p.status.Resource = &autoscalingv2.ResourceMetricStatus{Name: spec.Resource.Name, Current: *p.status.Resource.Current.DeepCopy()}
		return p
	case autoscalingv2.ContainerResourceMetricSourceType:
		if spec.ContainerResource == nil {
			return proposal{reason: "InvalidMetricSourceType", err: fmt.Errorf("metric of type ContainerResource has no containerResource")}
		}
		cr := spec.ContainerResource
		p := r.resource(ctx, f, current, cr.Name, cr.Container, cr.Target, tol)
		if p.err != nil {
			p.reason = "FailedGetContainerResourceMetric"
			return p
		}
		p.name = fmt.Sprintf("%s container resource utilization (percentage of request)", cr.Name)
		if cr.Target.AverageValue != nil {
			p.name = fmt.Sprintf("%s resource", cr.Name)
		}
		p.status = autoscalingv2.MetricStatus{Type: autoscalingv2.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv2.ContainerResourceMetricStatus{
			Name: cr.Name, Container: cr.Container, Current: p.status.Resource.Current}}
		return p
	case autoscalingv2.PodsMetricSourceType:
		if spec.Pods == nil || spec.Pods.Target.AverageValue == nil {
			return proposal{reason: "InvalidMetricSourceType", err: fmt.Errorf("metric of type Pods needs pods.target.averageValue")}
		}
		metricSelector, err := metav1.LabelSelectorAsSelector(spec.Pods.Metric.Selector)
		if err != nil {
			return proposal{reason: "FailedGetPodsMetric", err: err}
		}
		samples, err := r.samples(ctx, func(c *clusterv1alpha1.Cluster) (metricsclient.PodMetricsInfo, error) {
			return r.source.PodsMetric(ctx, c, r.namespace, r.selector, spec.Pods.Metric.Name, metricSelector)
		})
		if err != nil {
			return proposal{reason: "FailedGetPodsMetric", err: fmt.Errorf("unable to get metric %s: %w", spec.Pods.Metric.Name, err)}
		}
		replicas, average, err := PlainReplicas(f, current, spec.Pods.Target.AverageValue.MilliValue(), "", samples, tol)
		if err != nil {
			return proposal{reason: "FailedGetPodsMetric", err: err}
		}
		return proposal{replicas: replicas, name: "pods metric " + spec.Pods.Metric.Name, status: autoscalingv2.MetricStatus{
			Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricStatus{
				Metric:  autoscalingv2.MetricIdentifier{Name: spec.Pods.Metric.Name, Selector: spec.Pods.Metric.Selector},
				Current: autoscalingv2.MetricValueStatus{AverageValue: resource.NewMilliQuantity(average, resource.DecimalSI)}}}}
	default:
		return proposal{reason: "InvalidMetricSourceType", err: fmt.Errorf("metric of type %s is not supported by FederatedHPA", spec.Type)}
	}
}

// resource computes a Resource or ContainerResource metric's count; its status is left in status.Resource.
func (r fleetReader) resource(ctx context.Context, f Fleet, current int32, name corev1.ResourceName, container string, target autoscalingv2.MetricTarget, tol Tolerances) proposal {
	usage, err := r.samples(ctx, func(c *clusterv1alpha1.Cluster) (metricsclient.PodMetricsInfo, error) {
		return r.source.ResourceUsage(ctx, c, r.namespace, r.selector, name, container)
	})
	if err != nil {
		return proposal{err: fmt.Errorf("unable to get metrics for resource %s: %w", name, err)}
	}
	format := resource.DecimalSI
	if name == corev1.ResourceMemory {
		format = resource.BinarySI
	}
	status := autoscalingv2.MetricStatus{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{Name: name}}
	if target.AverageValue != nil {
		replicas, average, err := PlainReplicas(f, current, target.AverageValue.MilliValue(), name, usage, tol)
		if err != nil {
			return proposal{err: fmt.Errorf("failed to get %s usage: %w", name, err)}
		}
		status.Resource.Current.AverageValue = resource.NewMilliQuantity(average, format)
		return proposal{replicas: replicas, name: fmt.Sprintf("%s resource", name), status: status}
	}
	if target.AverageUtilization == nil {
		return proposal{err: fmt.Errorf("invalid resource metric source: neither an average utilization target nor an average value (usage) target was set")}
	}
	replicas, utilization, raw, err := ResourceReplicas(f, current, *target.AverageUtilization, name, container, usage, tol)
	if err != nil {
		return proposal{err: fmt.Errorf("failed to get %s utilization: %w", name, err)}
	}
	status.Resource.Current.AverageUtilization = &utilization
	status.Resource.Current.AverageValue = resource.NewMilliQuantity(raw, format)
	return proposal{replicas: replicas, name: fmt.Sprintf("%s resource utilization (percentage of request)", name), status: status}
}
