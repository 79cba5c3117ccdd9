package interpreter

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Dependency is an object in the workload's namespace that the workload refers to.
type Dependency struct {
	// APIVersion is the dependency's group/version; empty means v1 (the core group).
	APIVersion string
	Kind       string // built-in rules name ConfigMap, Secret, ServiceAccount or PersistentVolumeClaim
	Name       string
}

// podSpecPath is where a kind keeps its pod spec.
var podSpecPath = map[schema.GroupKind][]string{
	{Group: "apps", Kind: "Deployment"}:  {"spec", "template", "spec"},
	{Group: "apps", Kind: "StatefulSet"}: {"spec", "template", "spec"},
	{Group: "apps", Kind: "ReplicaSet"}:  {"spec", "template", "spec"},
	{Group: "apps", Kind: "DaemonSet"}:   {"spec", "template", "spec"},
	{Group: "batch", Kind: "Job"}:        {"spec", "template", "spec"},
	{Group: "batch", Kind: "CronJob"}:    {"spec", "jobTemplate", "spec", "template", "spec"},
	{Kind: "Pod"}:                        {"spec"},
}

// PodSpecPath returns where a kind keeps its pod spec; ok is false for kinds without pods.
func PodSpecPath(gk schema.GroupKind) (path []string, ok bool) {
	path, ok = podSpecPath[gk]
	return slices.Clone(path), ok
}

// Dependencies lists the ConfigMaps, Secrets, ServiceAccount and PVCs a workload's pods refer to, each once,
// in a stable order. Kinds without pods have none.
func Dependencies(obj *unstructured.Unstructured) []Dependency {
	path, ok := podSpecPath[obj.GroupVersionKind().GroupKind()]
	if !ok {
		return nil
	}
	raw, found, _ := unstructured.NestedMap(obj.Object, path...)
	if !found {
		return nil
	}
	spec := &corev1.PodSpec{}
	if runtime.DefaultUnstructuredConverter.FromUnstructured(raw, spec) != nil {
		return nil
	}
	var deps []Dependency
	add := func(kind, name string) {
		d := Dependency{Kind: kind, Name: name}
		if name != "" && !slices.Contains(deps, d) {
			deps = append(deps, d)
		}
	}
	if spec.ServiceAccountName != "" && spec.ServiceAccountName != "default" {
		add("ServiceAccount", spec.ServiceAccountName)
	}
	for _, s := range spec.ImagePullSecrets {
		add("Secret", s.Name)
	}
	for _, v := range spec.Volumes {
		switch {
		case v.ConfigMap != nil:
			add("ConfigMap", v.ConfigMap.Name)
		case v.Secret != nil:
			add("Secret", v.Secret.SecretName)
		case v.PersistentVolumeClaim != nil:
			add("PersistentVolumeClaim", v.PersistentVolumeClaim.ClaimName)
		case v.Projected != nil:
			for _, p := range v.Projected.Sources {
				if p.ConfigMap != nil {
					add("ConfigMap", p.ConfigMap.Name)
				}
				if p.Secret != nil {
					add("Secret", p.Secret.Name)
				}
			}
		}
	}
	for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
		for _, e := range c.EnvFrom {
			if e.ConfigMapRef != nil {
				add("ConfigMap", e.ConfigMapRef.Name)
			}
			if e.SecretRef != nil {
				add("Secret", e.SecretRef.Name)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			if e.ValueFrom.ConfigMapKeyRef != nil {
				add("ConfigMap", e.ValueFrom.ConfigMapKeyRef.Name)
			}
			if e.ValueFrom.SecretKeyRef != nil {
				add("Secret", e.ValueFrom.SecretKeyRef.Name)
			}
		}
	}
	return deps
}
