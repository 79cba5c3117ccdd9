package devenv

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

const probeName = "flotilla-readiness-probe"

// waitWorkloadsRun proves the member runs workloads end to end: a one-replica Deployment goes through the
// deployment and replica-set controllers, the scheduler and kwok to Available. The probe is removed after.
func waitWorkloadsRun(ctx context.Context, kube kubernetes.Interface) error {
	labels := map[string]string{"app": probeName}
	probe := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: probeName, Namespace: metav1.NamespaceSystem},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers:                    []corev1.Container{{Name: "probe", Image: "registry.k8s.io/pause:3.10"}},
					TerminationGracePeriodSeconds: ptr.To[int64](0),
				},
			},
		},
	}
	deployments := kube.AppsV1().Deployments(metav1.NamespaceSystem)
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := deployments.Get(ctx, probeName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			// Pods cannot be created before the namespace's default service account exists; the
			// controllers create it shortly after start, so creation is retried until it works.
			_, err = deployments.Create(ctx, probe, metav1.CreateOptions{})
			last = fmt.Sprint("creating the probe: ", err)
			return false, nil
		}
		if err != nil {
			last = err.Error()
			return false, nil
		}
		for _, c := range got.Status.Conditions {
			if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue && got.Status.AvailableReplicas == 1 {
				return true, nil
			}
		}
		last = fmt.Sprintf("probe Deployment has %d/1 available replicas", got.Status.AvailableReplicas)
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for a Deployment to become Available (%s): %w", last, err)
	}
	return deployments.Delete(ctx, probeName, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
}
