package override

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// imageRef is [registry/]repository[:tag][@digest].
type imageRef struct{ registry, repository, tag, digest string }

func parseImage(s string) imageRef {
	var r imageRef
	if i := strings.Index(s, "@"); i >= 0 {
		s, r.digest = s[:i], s[i:]
	}
	if i := strings.LastIndex(s, ":"); i > strings.LastIndex(s, "/") {
		s, r.tag = s[:i], s[i+1:]
	}
	if i := strings.Index(s, "/"); i >= 0 {
		if first := s[:i]; strings.ContainsAny(first, ".:") || first == "localhost" {
			r.registry, s = first, s[i+1:]
		}
	}
	r.repository = s
	return r
}

func (r imageRef) String() string {
	s := r.repository
	if r.registry != "" {
		s = r.registry + "/" + s
	}
	if r.tag != "" {
		s += ":" + r.tag
	}
	return s + r.digest
}

// overrideImage changes one component of an image: add appends the value to it (so it sets a missing
// registry or tag), replace sets it, remove clears it (a removed tag means latest).
func overrideImage(image string, o policyv1alpha1.ImageOverrider) (string, error) {
	r := parseImage(image)
	var part *string
	switch o.Component {
	case policyv1alpha1.ImageRegistry:
		part = &r.registry
	case policyv1alpha1.ImageRepository:
		part = &r.repository
	case policyv1alpha1.ImageTag:
		part = &r.tag
	default:
		return "", fmt.Errorf("unknown component %q", o.Component)
	}
	switch o.Operator {
	case policyv1alpha1.OverriderOpAdd:
		*part += o.Value
	case policyv1alpha1.OverriderOpReplace:
		*part = o.Value
	case policyv1alpha1.OverriderOpRemove:
		if o.Component == policyv1alpha1.ImageRepository {
			return "", fmt.Errorf("an image cannot lose its repository")
		}
		*part = ""
	default:
		return "", fmt.Errorf("unknown operator %q", o.Operator)
	}
	if r.repository == "" {
		return "", fmt.Errorf("the override leaves %q without a repository", image)
	}
	return r.String(), nil
}

// overrideImages changes the image at the predicate's path, or every container and init container image of
// a workload.
func overrideImages(m *unstructured.Unstructured, o policyv1alpha1.ImageOverrider) error {
	var paths []string
	if o.Predicate != nil {
		paths = []string{o.Predicate.Path}
	} else if spec, ok := interpreter.PodSpecPath(m.GroupVersionKind().GroupKind()); ok {
		base := "/" + strings.Join(spec, "/")
		for _, list := range []string{"initContainers", "containers"} {
			containers, _, _ := unstructured.NestedSlice(m.Object, append(spec, list)...)
			for i := range containers {
				paths = append(paths, fmt.Sprintf("%s/%s/%d/image", base, list, i))
			}
		}
	}
	for _, p := range paths {
		image, err := getString(m.Object, p)
		if err != nil {
			return err
		}
		changed, err := overrideImage(image, o)
		if err != nil {
			return err
		}
		if err := setString(m.Object, p, changed); err != nil {
			return err
		}
	}
	return nil
}

// overrideCommandArgs appends values to, or removes values from, the command or args of the named
// container. A workload without that container is an error.
func overrideCommandArgs(m *unstructured.Unstructured, o policyv1alpha1.CommandArgsOverrider, field string) error {
	spec, ok := interpreter.PodSpecPath(m.GroupVersionKind().GroupKind())
	if !ok {
		return fmt.Errorf("%s has no containers", m.GetKind())
	}
	for _, list := range []string{"containers", "initContainers"} {
		containers, _, _ := unstructured.NestedSlice(m.Object, append(spec, list)...)
		for i, c := range containers {
			container, _ := c.(map[string]any)
			if container["name"] != o.ContainerName {
				continue
			}
			current, _, _ := unstructured.NestedStringSlice(container, field)
			switch o.Operator {
			case "add":
				current = append(current, o.Value...)
			case "remove":
				current = slices.DeleteFunc(current, func(s string) bool { return slices.Contains(o.Value, s) })
			default:
				return fmt.Errorf("unknown operator %q", o.Operator)
			}
			values := make([]any, len(current))
			for j, v := range current {
				values[j] = v
			}
			container[field] = values
			containers[i] = container
			return unstructured.SetNestedSlice(m.Object, containers, append(spec, list)...)
		}
	}
	return fmt.Errorf("no container named %q", o.ContainerName)
}

// overrideField applies JSON patch operations to the JSON or YAML document held in a string field, and
// writes it back in the same format.
func overrideField(m *unstructured.Unstructured, o policyv1alpha1.FieldOverrider) error {
	doc, err := getString(m.Object, o.FieldPath)
	if err != nil {
		return err
	}
	ops, isYAML := o.JSON, false
	if len(o.YAML) > 0 {
		ops, isYAML = o.YAML, true
	}
	raw := []byte(doc)
	if isYAML {
		if raw, err = yaml.YAMLToJSON(raw); err != nil {
			return fmt.Errorf("%s is not YAML: %w", o.FieldPath, err)
		}
	}
	patch := make([]patchOp, len(ops))
	for i, op := range ops {
		patch[i] = patchOp{op.Operator, op.SubPath, op.Value}
	}
	out, err := applyPatch(raw, patch)
	if err != nil {
		return fmt.Errorf("%s: %w", o.FieldPath, err)
	}
	if isYAML {
		if out, err = yaml.JSONToYAML(out); err != nil {
			return err
		}
	}
	return setString(m.Object, o.FieldPath, string(out))
}

// overridePlaintext applies JSON patch operations to the whole manifest.
func overridePlaintext(m *unstructured.Unstructured, ops []policyv1alpha1.PlaintextOverrider) error {
	patch := make([]patchOp, len(ops))
	for i, op := range ops {
		patch[i] = patchOp{op.Operator, op.Path, op.Value}
	}
	raw, err := m.MarshalJSON()
	if err != nil {
		return err
	}
	out, err := applyPatch(raw, patch)
	if err != nil {
		return err
	}
	return m.UnmarshalJSON(out)
}

// patchOp is one JSON patch operation of a fieldOverrider or plaintext overrider.
type patchOp struct {
	operator policyv1alpha1.OverriderOperator
	path     string
	value    *apiextensionsv1.JSON
}

// applyPatch applies JSON patch operations to doc; add and replace need a value.
func applyPatch(doc []byte, ops []patchOp) ([]byte, error) {
	patch := make([]map[string]any, len(ops))
	for i, op := range ops {
		patch[i] = map[string]any{"op": string(op.operator), "path": op.path}
		if op.operator != policyv1alpha1.OverriderOpRemove {
			if op.value == nil {
				return nil, fmt.Errorf("operation %d (%s %s) needs a value", i, op.operator, op.path)
			}
			patch[i]["value"] = json.RawMessage(op.value.Raw)
		}
	}
	data, err := json.Marshal(patch)
	if err != nil {
		return nil, err
	}
	decoded, err := jsonpatch.DecodePatch(data)
	if err != nil {
		return nil, err
	}
	return decoded.Apply(doc)
}
