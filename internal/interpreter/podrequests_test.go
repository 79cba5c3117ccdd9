package interpreter

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestPodRequests(t *testing.T) {
	requests := func(cpu, memory string) corev1.ResourceRequirements {
		r := corev1.ResourceList{}
		if cpu != "" {
			r[corev1.ResourceCPU] = resource.MustParse(cpu)
		}
		if memory != "" {
			r[corev1.ResourceMemory] = resource.MustParse(memory)
		}
		return corev1.ResourceRequirements{Requests: r}
	}
	container := func(cpu, memory string) corev1.Container { return corev1.Container{Resources: requests(cpu, memory)} }
	always := corev1.ContainerRestartPolicyAlways
	sidecar := func(cpu, memory string) corev1.Container {
		c := container(cpu, memory)
		c.RestartPolicy = &always
		return c
	}
	list := func(cpu, memory string) corev1.ResourceList { return requests(cpu, memory).Requests }
	tests := []struct {
		name string
		spec corev1.PodSpec
		want corev1.ResourceList
	}{
		{"containers are summed",
			corev1.PodSpec{Containers: []corev1.Container{container("100m", "64Mi"), container("200m", "")}},
			list("300m", "64Mi")},
		{"a larger init container sets the floor, per resource",
			corev1.PodSpec{InitContainers: []corev1.Container{container("1", "32Mi")},
				Containers: []corev1.Container{container("100m", "64Mi")}},
			list("1", "64Mi")},
		{"a sidecar runs beside the containers and the init containers after it",
			corev1.PodSpec{InitContainers: []corev1.Container{sidecar("100m", ""), container("1", "")},
				Containers: []corev1.Container{container("200m", "")}},
			list("1100m", "")},
		{"the pod overhead is added",
			corev1.PodSpec{Overhead: list("50m", "10Mi"), Containers: []corev1.Container{container("100m", "64Mi")}},
			list("150m", "74Mi")},
		{"pod-level requests replace the containers' sum",
			corev1.PodSpec{Resources: &corev1.ResourceRequirements{Requests: list("2", "")},
				Containers: []corev1.Container{container("100m", "64Mi")}},
			list("2", "64Mi")},
		{"nothing requested", corev1.PodSpec{Containers: []corev1.Container{{}}}, corev1.ResourceList{}},
	}
	for _, tt := range tests {
		if got := PodRequests(&tt.spec); !equality.Semantic.DeepEqual(got, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}
