package interpreter

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// What the hub asks a webhook and how it reads the answers, one operation each. A successful answer that
// lacks what its operation needs (InterpretReplica without replicas, a patch that does not apply) is an
// *Error naming the webhook whatever its failurePolicy: Ignore covers a webhook that could not answer, not
// one that answered wrong, which its owner must hear of.

// fillRequest sets what every request says of the object: its kind, name, namespace and the object itself.
func fillRequest(req *configv1alpha1.ResourceInterpreterRequest, obj *unstructured.Unstructured) error {
	raw, err := obj.MarshalJSON()
	if err != nil {
		return err
	}
	gvk := obj.GroupVersionKind()
	req.Kind = metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind}
	req.Name, req.Namespace = obj.GetName(), obj.GetNamespace()
	req.Object = runtime.RawExtension{Raw: raw}
	return nil
}

// aggregatedItems are the members' statuses as AggregateStatus sends them, of the clusters that reported one.
func aggregatedItems(members []Member) ([]workv1alpha1.AggregatedStatusItem, error) {
	var items []workv1alpha1.AggregatedStatusItem
	for _, m := range members {
		if m.Status == nil {
			continue
		}
		raw, err := json.Marshal(m.Status)
		if err != nil {
			return nil, err
		}
		items = append(items, workv1alpha1.AggregatedStatusItem{ClusterName: m.Cluster, Status: &runtime.RawExtension{Raw: raw}})
	}
	return items, nil
}

// fail is an *Error of the webhook's answer to op.
func (w *Webhook) fail(op Operation, format string, args ...any) *Error {
	return &Error{Webhook: w.describe(), Operation: op, Err: fmt.Errorf(format, args...)}
}

// replicas reads InterpretReplica's answer: the replica count (required) and one replica's requirements.
func (w *Webhook) replicas(resp *configv1alpha1.ResourceInterpreterResponse) (int32, *workv1alpha1.ReplicaRequirements, error) {
	if resp.Replicas == nil {
		return 0, nil, w.fail(OpReplicaResource, "the answer has no replicas")
	}
	if *resp.Replicas < 0 {
		return 0, nil, w.fail(OpReplicaResource, "replicas %d is negative", *resp.Replicas)
	}
	var req *workv1alpha1.ReplicaRequirements
	if r := resp.ReplicaRequirements; r != nil {
		req = requirements(r.ResourceRequest, r.NodeClaim)
	}
	return *resp.Replicas, req, nil
}

// patch applies the JSON patch of ReviseReplica's answer to a cluster's manifest; one that changes which
// object it is (apiVersion, kind, name, namespace) fails.
func (w *Webhook) patch(obj *unstructured.Unstructured, op Operation, resp *configv1alpha1.ResourceInterpreterResponse) error {
	patched, err := applyPatch(obj, resp.Patch)
	if err != nil {
		return w.fail(op, "%v", err)
	}
	if patched.GroupVersionKind() != obj.GroupVersionKind() || patched.GetName() != obj.GetName() || patched.GetNamespace() != obj.GetNamespace() {
		return w.fail(op, "the patch changes the object's apiVersion, kind, name or namespace")
	}
	obj.Object = patched.Object
	return nil
}

// applyPatch is obj with a JSON patch applied; obj itself when the patch is empty.
func applyPatch(obj *unstructured.Unstructured, patch []byte) (*unstructured.Unstructured, error) {
	if len(patch) == 0 {
		return obj.DeepCopy(), nil
	}
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return nil, fmt.Errorf("the answer's patch is not a JSON patch: %w", err)
	}
	doc, err := obj.MarshalJSON()
	if err != nil {
		return nil, err
	}
	if doc, err = p.Apply(doc); err != nil {
		return nil, fmt.Errorf("the answer's patch does not apply: %w", err)
	}
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(doc); err != nil {
		return nil, fmt.Errorf("the patched object: %w", err)
	}
	return out, nil
}

// status reads InterpretStatus's answer: the status to report (none: an empty one).
func (w *Webhook) status(resp *configv1alpha1.ResourceInterpreterResponse) (map[string]any, error) {
	status := map[string]any{}
	if resp.RawStatus == nil || len(resp.RawStatus.Raw) == 0 || string(resp.RawStatus.Raw) == "null" {
		return status, nil
	}
	if err := utiljson.Unmarshal(resp.RawStatus.Raw, &status); err != nil {
		return nil, w.fail(OpStatusReflection, "rawStatus is not an object: %v", err)
	}
	return status, nil
}

// healthy reads InterpretHealth's answer.
func (w *Webhook) healthy(resp *configv1alpha1.ResourceInterpreterResponse) (bool, error) {
	if resp.Healthy == nil {
		return false, w.fail(OpHealthInterpretation, "the answer has no healthy")
	}
	return *resp.Healthy, nil
}

// aggregated reads AggregateStatus's answer: the template patched with its new status; the status alone is
// kept (the hub writes a template's status, never its spec).
func (w *Webhook) aggregated(template *unstructured.Unstructured, resp *configv1alpha1.ResourceInterpreterResponse) (map[string]any, error) {
	patched, err := applyPatch(template, resp.Patch)
	if err != nil {
		return nil, w.fail(OpStatusAggregation, "%v", err)
	}
	status, _, err := unstructured.NestedMap(patched.Object, "status")
	if err != nil {
		return nil, w.fail(OpStatusAggregation, "%v", err)
	}
	if status == nil {
		status = map[string]any{}
	}
	return status, nil
}

// dependencies reads InterpretDependency's answer; a dependency must live in the template's namespace (or be
// cluster-scoped, naming none).
func (w *Webhook) dependencies(obj *unstructured.Unstructured, resp *configv1alpha1.ResourceInterpreterResponse) ([]Dependency, error) {
	var deps []Dependency
	var errs []string
	for _, d := range resp.Dependencies {
		switch {
		case d.APIVersion == "" || d.Kind == "" || d.Name == "":
			errs = append(errs, fmt.Sprintf("%+v does not name an apiVersion, kind and name", d))
		case d.Namespace != "" && d.Namespace != obj.GetNamespace():
			errs = append(errs, fmt.Sprintf("%s %s is in namespace %s, not the object's", d.Kind, d.Name, d.Namespace))
		default:
			deps = append(deps, Dependency{APIVersion: d.APIVersion, Kind: d.Kind, Name: d.Name})
		}
	}
	if len(errs) > 0 {
		return nil, &Error{Webhook: w.describe(), Operation: OpDependencyInterpretation, Err: errors.New(strings.Join(errs, "; "))}
	}
	return deps, nil
}
