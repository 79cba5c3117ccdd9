package interpreter

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// The typed operations of a customization. Each returns an *Error when the expression fails or returns
// something of the wrong shape; a caller that gets one marks the binding and goes on.

// Replicas runs replicaResource: the object's replica count and one replica's requests (nil when it names
// none).
func (c *Customization) Replicas(obj *unstructured.Unstructured) (int32, corev1.ResourceList, error) {
	n, req, err := c.Requirements(obj)
	if req == nil {
		return n, nil, err
	}
	return n, req.ResourceRequest, err
}

// Requirements runs replicaResource: the object's replica count and one replica's requirements, its
// requests and its nodeClaim (Karmada's shape: nodeSelector, tolerations, hardNodeAffinity), nil when it
// names neither.
func (c *Customization) Requirements(obj *unstructured.Unstructured) (int32, *workv1alpha1.ReplicaRequirements, error) {
	out, err := c.eval(OpReplicaResource, obj.Object, nil)
	if err != nil {
		return 0, nil, err
	}
	fail := func(format string, args ...any) (int32, *workv1alpha1.ReplicaRequirements, error) {
		return 0, nil, &Error{Customization: c.Name, Operation: OpReplicaResource, Err: fmt.Errorf(format, args...)}
	}
	m := out.(map[string]any)
	n, ok := m["replicas"].(int64)
	if !ok {
		return fail("replicas is %T (%v), want an int", m["replicas"], m["replicas"])
	}
	if n < 0 || n > 1<<31-1 {
		return fail("replicas %d is out of range", n)
	}
	var claim *workv1alpha1.NodeClaim
	if raw, ok := m["nodeClaim"].(map[string]any); ok {
		claim = &workv1alpha1.NodeClaim{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, claim); err != nil {
			return fail("nodeClaim: %v", err)
		}
	} else if m["nodeClaim"] != nil {
		return fail("nodeClaim is %T, want a map with nodeSelector, tolerations and hardNodeAffinity", m["nodeClaim"])
	}
	raw, ok := m["requests"]
	if !ok || raw == nil {
		return int32(n), requirements(nil, claim), nil
	}
	// A list of maps (one per container) is summed: CEL has no sum of quantities.
	parts, isList := raw.([]any)
	if !isList {
		parts = []any{raw}
	}
	list := corev1.ResourceList{}
	for _, part := range parts {
		requests, ok := part.(map[string]any)
		if !ok {
			return fail("requests holds %T, want a map of resource names to quantities (or a list of them)", part)
		}
		for name, v := range requests {
			q, err := resource.ParseQuantity(fmt.Sprint(v))
			if err != nil {
				return fail("requests[%s]: %v", name, err)
			}
			sum := list[corev1.ResourceName(name)]
			sum.Add(q)
			list[corev1.ResourceName(name)] = sum
		}
	}
	return int32(n), requirements(list, claim), nil
}

// requirements holds requests and a node claim, nil when neither says anything.
func requirements(requests corev1.ResourceList, claim *workv1alpha1.NodeClaim) *workv1alpha1.ReplicaRequirements {
	if claim != nil && len(claim.NodeSelector) == 0 && len(claim.Tolerations) == 0 && claim.HardNodeAffinity == nil {
		claim = nil
	}
	if len(requests) == 0 && claim == nil {
		return nil
	}
	if len(requests) == 0 {
		requests = nil
	}
	return &workv1alpha1.ReplicaRequirements{ResourceRequest: requests, NodeClaim: claim}
}

// ReviseReplicas runs replicaRevision on a cluster's manifest and sets the fields it names.
func (c *Customization) ReviseReplicas(obj *unstructured.Unstructured, replicas int32) error {
	out, err := c.eval(OpReplicaRevision, obj.Object, map[string]any{"replicas": int64(replicas)})
	if err != nil {
		return err
	}
	for path, v := range out.(map[string]any) {
		if err := checkPath(path); err != nil {
			return &Error{Customization: c.Name, Operation: OpReplicaRevision, Err: err}
		}
		if err := unstructured.SetNestedField(obj.Object, runtime.DeepCopyJSONValue(v), fieldPath(path)...); err != nil {
			return &Error{Customization: c.Name, Operation: OpReplicaRevision, Err: fmt.Errorf("setting %s: %w", path, err)}
		}
	}
	return nil
}

// Retained runs retention: the dotted paths of the fields members own.
func (c *Customization) Retained(obj *unstructured.Unstructured) ([]string, error) {
	out, err := c.eval(OpRetention, obj.Object, nil)
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, p := range out.([]any) {
		s, ok := p.(string)
		if !ok {
			return nil, &Error{Customization: c.Name, Operation: OpRetention, Err: fmt.Errorf("%v is not a field path", p)}
		}
		if err := checkPath(s); err != nil {
			return nil, &Error{Customization: c.Name, Operation: OpRetention, Err: err}
		}
		paths = append(paths, s)
	}
	return paths, nil
}

// ReflectStatus runs statusReflection on a member object.
func (c *Customization) ReflectStatus(obj *unstructured.Unstructured) (map[string]any, error) {
	out, err := c.eval(OpStatusReflection, obj.Object, nil)
	if err != nil {
		return nil, err
	}
	return out.(map[string]any), nil
}

// AggregateStatus runs statusAggregation: the template's status from its members', of those that reported
// one.
func (c *Customization) AggregateStatus(template *unstructured.Unstructured, members []Member) (map[string]any, error) {
	list := make([]any, 0, len(members))
	for _, m := range members {
		if m.Status != nil {
			list = append(list, map[string]any{"clusterName": m.Cluster, "status": m.Status})
		}
	}
	out, err := c.eval(OpStatusAggregation, template.Object, map[string]any{"statuses": list})
	if err != nil {
		return nil, err
	}
	return out.(map[string]any), nil
}

// Healthy runs healthInterpretation on a member object.
func (c *Customization) Healthy(obj *unstructured.Unstructured) (bool, error) {
	out, err := c.eval(OpHealthInterpretation, obj.Object, nil)
	if err != nil {
		return false, err
	}
	return out.(bool), nil
}

// Dependencies runs dependencyInterpretation on a template.
func (c *Customization) Dependencies(obj *unstructured.Unstructured) ([]Dependency, error) {
	out, err := c.eval(OpDependencyInterpretation, obj.Object, nil)
	if err != nil {
		return nil, err
	}
	var deps []Dependency
	for _, item := range out.([]any) {
		m, _ := item.(map[string]any)
		d := Dependency{}
		d.APIVersion, _ = m["apiVersion"].(string)
		d.Kind, _ = m["kind"].(string)
		d.Name, _ = m["name"].(string)
		if d.APIVersion == "" || d.Kind == "" || d.Name == "" {
			return nil, &Error{Customization: c.Name, Operation: OpDependencyInterpretation,
				Err: fmt.Errorf("%v does not name an apiVersion, kind and name", item)}
		}
		deps = append(deps, d)
	}
	return deps, nil
}

// RemoveFields removes the fields at dotted paths from obj.
func RemoveFields(obj *unstructured.Unstructured, paths []string) {
	for _, p := range paths {
		unstructured.RemoveNestedField(obj.Object, fieldPath(p)...)
	}
}

// fieldPath splits a dotted path ("spec.replicas"; a leading dot is allowed).
func fieldPath(p string) []string { return strings.Split(strings.TrimPrefix(p, "."), ".") }

// checkPath refuses a path that is empty, has an empty segment, or names what identifies the object (its
// apiVersion, kind, name and namespace): a customization changes an object's content, never which object
// Flotilla applies.
func checkPath(p string) error {
	parts := fieldPath(p)
	if slices.Contains(parts, "") {
		return fmt.Errorf("%q is not a field path", p)
	}
	switch {
	case parts[0] == "apiVersion" || parts[0] == "kind",
		len(parts) == 1 && parts[0] == "metadata",
		len(parts) >= 2 && parts[0] == "metadata" && (parts[1] == "name" || parts[1] == "namespace" || parts[1] == "generateName"):
		return fmt.Errorf("%s identifies the object and cannot be revised or retained", p)
	}
	return nil
}
