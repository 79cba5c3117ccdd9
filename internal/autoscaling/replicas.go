package autoscaling

import (
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	metricsclient "k8s.io/kubernetes/pkg/controller/podautoscaler/metrics"
)

// Upstream HorizontalPodAutoscaler constants (kube-controller-manager's defaults).
const (
	// DefaultTolerance is the usage ratio's dead band around 1.0 within which the replica count stays.
	DefaultTolerance = 0.1
	// cpuInitializationPeriod: a pod this young is unready for CPU unless its metric comes after it was ready.
	cpuInitializationPeriod = 5 * time.Minute
	// delayOfInitialReadinessStatus: an older pod that has never been ready is unready for CPU.
	delayOfInitialReadinessStatus = 30 * time.Second
)

// Tolerances are the usage ratio's dead band: no scaling while 1-Down ≤ ratio ≤ 1+Up.
type Tolerances struct{ Down, Up float64 }

func (t Tolerances) within(ratio float64) bool { return 1-t.Down <= ratio && ratio <= 1+t.Up }

// Fleet is the target's pods in every member, each named "cluster/pod" so names never collide, and their
// metric samples under the same names.
type Fleet struct {
	Pods []*corev1.Pod
	// Now is the clock the pods' ages are read against.
	Now time.Time
}

// ResourceReplicas is the upstream GetResourceReplicas over the fleet: the replica count that brings the
// pods' average utilization of resource (percent of their requests) to target. usage holds one sample per
// pod; container limits both usage and requests to one container when set. It returns the count and the
// current average utilization and raw average value.
func ResourceReplicas(f Fleet, current, target int32, resource corev1.ResourceName, container string, usage metricsclient.PodMetricsInfo, tol Tolerances) (int32, int32, int64, error) {
	if len(f.Pods) == 0 {
		return 0, 0, 0, fmt.Errorf("no pods of the target in any member")
	}
	ready, unready, missing, ignored := groupPods(f, usage, resource)
	removeMetrics(usage, ignored)
	removeMetrics(usage, unready)
	if len(usage) == 0 {
		return 0, 0, 0, fmt.Errorf("no metrics for the target's pods (they may be unready)")
	}
	requests, err := podRequests(f.Pods, container, resource)
	if err != nil {
		return 0, 0, 0, err
	}
	ratio, utilization, raw, err := metricsclient.GetResourceUtilizationRatio(usage, requests, target)
	if err != nil {
		return 0, 0, 0, err
	}
	scaleUpWithUnready := len(unready) > 0 && ratio > 1.0
	if !scaleUpWithUnready && len(missing) == 0 {
		if tol.within(ratio) {
			return current, utilization, raw, nil
		}
		return int32(math.Ceil(ratio * float64(ready))), utilization, raw, nil
	}
	if len(missing) > 0 {
		switch {
		case ratio < 1.0:
			fallback := int64(max(100, target))
			for name := range missing {
				usage[name] = metricsclient.PodMetric{Value: requests[name] * fallback / 100}
			}
		case ratio > 1.0:
			for name := range missing {
				usage[name] = metricsclient.PodMetric{Value: 0}
			}
		}
	}
	if scaleUpWithUnready {
		for name := range unready {
			usage[name] = metricsclient.PodMetric{Value: 0}
		}
	}
	newRatio, _, _, err := metricsclient.GetResourceUtilizationRatio(usage, requests, target)
	if err != nil {
		return 0, utilization, raw, err
	}
	return settle(current, ratio, newRatio, len(usage), tol), utilization, raw, nil
}

// PlainReplicas is the upstream calcPlainMetricReplicas over the fleet: the replica count that brings the
// pods' average of a metric (a milli-value: a Pods metric, or a Resource metric's averageValue) to target.
// It returns the count and the current average.
func PlainReplicas(f Fleet, current int32, target int64, resource corev1.ResourceName, samples metricsclient.PodMetricsInfo, tol Tolerances) (int32, int64, error) {
	if len(f.Pods) == 0 {
		return 0, 0, fmt.Errorf("no pods of the target in any member")
	}
	ready, unready, missing, ignored := groupPods(f, samples, resource)
	removeMetrics(samples, ignored)
	removeMetrics(samples, unready)
	if len(samples) == 0 {
		return 0, 0, fmt.Errorf("no metrics for the target's pods (they may be unready)")
	}
	ratio, average := metricsclient.GetMetricUsageRatio(samples, target)
	scaleUpWithUnready := len(unready) > 0 && ratio > 1.0
	if !scaleUpWithUnready && len(missing) == 0 {
		if tol.within(ratio) {
			return current, average, nil
		}
		return int32(math.Ceil(ratio * float64(ready))), average, nil
	}
	if len(missing) > 0 {
		switch {
		case ratio < 1.0:
			for name := range missing {
				samples[name] = metricsclient.PodMetric{Value: target}
			}
		case ratio > 1.0:
			for name := range missing {
				samples[name] = metricsclient.PodMetric{Value: 0}
			}
		}
	}
	if scaleUpWithUnready {
		for name := range unready {
			samples[name] = metricsclient.PodMetric{Value: 0}
		}
	}
	newRatio, _ := metricsclient.GetMetricUsageRatio(samples, target)
	return settle(current, ratio, newRatio, len(samples), tol), average, nil
}

// settle is the end of both upstream calculations once missing and unready pods have been given their
// assumed values: stay when the change is within tolerance or the assumptions turned the direction around,
// else the ratio times the pods counted.
func settle(current int32, ratio, newRatio float64, counted int, tol Tolerances) int32 {
	if tol.within(newRatio) || (ratio < 1.0 && newRatio > 1.0) || (ratio > 1.0 && newRatio < 1.0) {
		return current
	}
	replicas := int32(math.Ceil(newRatio * float64(counted)))
	if (newRatio < 1.0 && replicas > current) || (newRatio > 1.0 && replicas < current) {
		return current
	}
	return replicas
}

// groupPods sorts the pods as upstream does: deleted and failed pods are ignored; pending pods are unready;
// pods without a sample are missing; for CPU, a pod is also unready while it starts (its sample predates a
// full window after it became ready) or when it has never been ready.
func groupPods(f Fleet, samples metricsclient.PodMetricsInfo, resource corev1.ResourceName) (ready int, unready, missing, ignored sets.Set[string]) {
	unready, missing, ignored = sets.New[string](), sets.New[string](), sets.New[string]()
	for _, pod := range f.Pods {
		if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodFailed {
			ignored.Insert(pod.Name)
			continue
		}
		if pod.Status.Phase == corev1.PodPending {
			unready.Insert(pod.Name)
			continue
		}
		sample, found := samples[pod.Name]
		if !found {
			missing.Insert(pod.Name)
			continue
		}
		if resource == corev1.ResourceCPU && cpuUnready(pod, sample, f.Now) {
			unready.Insert(pod.Name)
			continue
		}
		ready++
	}
	return ready, unready, missing, ignored
}

// cpuUnready is upstream's test of whether a running pod's CPU sample can be trusted.
func cpuUnready(pod *corev1.Pod, sample metricsclient.PodMetric, now time.Time) bool {
	var cond *corev1.PodCondition
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodReady {
			cond = &pod.Status.Conditions[i]
		}
	}
	if cond == nil || pod.Status.StartTime == nil {
		return true
	}
	if pod.Status.StartTime.Add(cpuInitializationPeriod).After(now) {
		return cond.Status == corev1.ConditionFalse || sample.Timestamp.Before(cond.LastTransitionTime.Add(sample.Window))
	}
	return cond.Status == corev1.ConditionFalse && pod.Status.StartTime.Add(delayOfInitialReadinessStatus).After(cond.LastTransitionTime.Time)
}

// podRequests is each pod's request of resource in milli-units: its pod-level request when it has one and no
// container is named, else the sum over its containers (sidecar init containers included) or the one named.
func podRequests(pods []*corev1.Pod, container string, resource corev1.ResourceName) (map[string]int64, error) {
	out := make(map[string]int64, len(pods))
	for _, pod := range pods {
		if container == "" && pod.Spec.Resources != nil {
			if q, ok := pod.Spec.Resources.Requests[resource]; ok {
				out[pod.Name] = q.MilliValue()
				continue
			}
		}
		containers := append([]corev1.Container{}, pod.Spec.Containers...)
		for _, c := range pod.Spec.InitContainers {
			if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
				containers = append(containers, c)
			}
		}
		var sum int64
		found := false
		for _, c := range containers {
			if container != "" && c.Name != container {
				continue
			}
			q, ok := c.Resources.Requests[resource]
			if !ok {
				return nil, fmt.Errorf("container %s of pod %s requests no %s", c.Name, pod.Name, resource)
			}
			sum += q.MilliValue()
			found = true
		}
		if container != "" && !found {
			return nil, fmt.Errorf("pod %s has no container %s", pod.Name, container)
		}
		out[pod.Name] = sum
	}
	return out, nil
}

func removeMetrics(samples metricsclient.PodMetricsInfo, pods sets.Set[string]) {
	for name := range pods {
		delete(samples, name)
	}
}
