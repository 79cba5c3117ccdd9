package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// DefaultResourceModels are the grades a cluster without spec.resourceModels sorts its nodes into: CPU and
// memory in nine grades that double from 1 CPU and 2Gi, so that nodes of a typical fleet's sizes (2, 4, 8,
// 16, 32, 64 CPUs with 4 to 8 GiB per CPU) land in grades of their own. The last grade's max stands for no
// bound.
func DefaultResourceModels() []ResourceModel {
	cpu := []string{"0", "1", "2", "4", "8", "16", "32", "64", "128", "1e12"}
	memory := []string{"0", "2Gi", "4Gi", "8Gi", "16Gi", "32Gi", "64Gi", "128Gi", "512Gi", "1e18"}
	out := make([]ResourceModel, len(cpu)-1)
	for i := range out {
		out[i] = ResourceModel{Grade: int32(i), Ranges: []ResourceModelRange{
			{Name: corev1.ResourceCPU, Min: resource.MustParse(cpu[i]), Max: resource.MustParse(cpu[i+1])},
			{Name: corev1.ResourceMemory, Min: resource.MustParse(memory[i]), Max: resource.MustParse(memory[i+1])},
		}}
	}
	return out
}
