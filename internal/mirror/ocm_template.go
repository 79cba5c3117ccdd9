package mirror

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	addonv1alpha1 "github.com/flotilla-io/flotilla/api/addon/v1alpha1"
	ocmaddonv1alpha1 "github.com/flotilla-io/flotilla/api/ocm/addon/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// What OCM's template add-ons expect of the pods they install, which Flotilla's template has as variables
// and as ordinary manifest content.
const (
	// hubKubeconfigVolume is the volume, on the pod templates of an add-on with registration, that holds its
	// hub credential Secret, mounted in every container at hubKubeconfigDir.
	hubKubeconfigVolume = "hub-kubeconfig"
	hubKubeconfigDir    = "/managed/hub-kubeconfig"
	// ocmHubKubeconfig is OCM's template variable for the path of the agent's hub kubeconfig in its pods.
	ocmHubKubeconfig = "{{HUB_KUBECONFIG}}"
)

// hubKubeconfigPath is the file of the hub kubeconfig in an add-on's pods.
var hubKubeconfigPath = hubKubeconfigDir + "/" + addonv1alpha1.CredentialSecretKey

// templateManifests are an AddOnTemplate's manifests as a Flotilla AddOn template installs them the way OCM
// does:
//   - Every namespaced manifest goes to the add-on's install namespace (its namespace is dropped; OCM moves
//     them to the AddOnDeploymentConfig's agentInstallNamespace, by default open-cluster-management-agent-addon),
//     and a Namespace manifest of a namespace they were in is dropped: the hub creates the install namespace.
//     ServiceAccount subjects of role bindings in such a namespace follow ({{INSTALL_NAMESPACE}}).
//   - Deployments and DaemonSets get, in every container, the variables CLUSTER_NAME, INSTALL_NAMESPACE and,
//     with registration, HUB_KUBECONFIG as environment, and with registration the hub credential Secret
//     mounted at /managed/hub-kubeconfig.
//   - {{HUB_KUBECONFIG}} becomes the path of that kubeconfig; {{CLUSTER_NAME}}, {{INSTALL_NAMESPACE}} and
//     the customizedVariables are Flotilla's variables too, replaced per cluster by the hub.
func templateManifests(addon string, template *ocmaddonv1alpha1.AddOnTemplate) ([]workv1alpha1.Manifest, error) {
	registered := len(template.Spec.Registration) > 0
	objects := make([]map[string]any, 0, len(template.Spec.AgentSpec.Workload.Manifests))
	relocated := map[string]bool{}
	for i, m := range template.Spec.AgentSpec.Workload.Manifests {
		var o map[string]any
		if err := json.Unmarshal(m.Raw, &o); err != nil {
			return nil, fmt.Errorf("manifest %d: %w", i, err)
		}
		objects = append(objects, o)
		if ns := namespaceOf(o); ns != "" {
			relocated[ns] = true
		}
	}
	var out []workv1alpha1.Manifest
	for _, o := range objects {
		kind, _ := o["kind"].(string)
		if kind == "Namespace" && relocated[nameOf(o)] {
			continue
		}
		if metadata, ok := o["metadata"].(map[string]any); ok {
			delete(metadata, "namespace")
		}
		switch kind {
		case "RoleBinding", "ClusterRoleBinding":
			subjects, _ := o["subjects"].([]any)
			for _, s := range subjects {
				if s, ok := s.(map[string]any); ok && relocated[fmt.Sprint(s["namespace"])] {
					s["namespace"] = "{{INSTALL_NAMESPACE}}"
				}
			}
		case "Deployment", "DaemonSet":
			if spec, ok := nested(o, "spec", "template", "spec"); ok {
				decoratePod(spec, addon, registered)
			}
		}
		raw, err := json.Marshal(replaceStrings(o, ocmHubKubeconfig, hubKubeconfigPath))
		if err != nil {
			return nil, err
		}
		out = append(out, workv1alpha1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}})
	}
	return out, nil
}

// decoratePod gives a pod template what OCM gives an add-on's pods: the built-in variables as environment
// and, with registration, the hub credential Secret mounted.
func decoratePod(spec map[string]any, addon string, registered bool) {
	env := []any{
		map[string]any{"name": "CLUSTER_NAME", "value": "{{CLUSTER_NAME}}"},
		map[string]any{"name": "INSTALL_NAMESPACE", "value": "{{INSTALL_NAMESPACE}}"},
	}
	if registered {
		env = append(env, map[string]any{"name": "HUB_KUBECONFIG", "value": hubKubeconfigPath})
		spec["volumes"] = append(without(spec["volumes"], hubKubeconfigVolume),
			map[string]any{"name": hubKubeconfigVolume, "secret": map[string]any{"secretName": addonv1alpha1.CredentialSecretName(addon)}})
	}
	containers, _ := spec["containers"].([]any)
	for _, c := range containers {
		c, ok := c.(map[string]any)
		if !ok {
			continue
		}
		own, _ := c["env"].([]any)
		own = slices.DeleteFunc(slices.Clone(own), func(e any) bool {
			return slices.ContainsFunc(env, func(b any) bool { return sameName(e, b) })
		})
		c["env"] = append(own, env...)
		if registered {
			c["volumeMounts"] = append(without(c["volumeMounts"], hubKubeconfigVolume),
				map[string]any{"name": hubKubeconfigVolume, "mountPath": hubKubeconfigDir, "readOnly": true})
		}
	}
}

// without is a list of named items less the one named name.
func without(list any, name string) []any {
	items, _ := list.([]any)
	return slices.DeleteFunc(slices.Clone(items), func(i any) bool { return sameName(i, map[string]any{"name": name}) })
}

func sameName(a, b any) bool {
	am, ok1 := a.(map[string]any)
	bm, ok2 := b.(map[string]any)
	return ok1 && ok2 && am["name"] == bm["name"]
}

// replaceStrings replaces old with new in every string of v.
func replaceStrings(v any, old, new string) any {
	switch v := v.(type) {
	case string:
		return strings.ReplaceAll(v, old, new)
	case map[string]any:
		for k, e := range v {
			v[k] = replaceStrings(e, old, new)
		}
	case []any:
		for i, e := range v {
			v[i] = replaceStrings(e, old, new)
		}
	}
	return v
}

func nested(o map[string]any, path ...string) (map[string]any, bool) {
	for _, p := range path {
		next, ok := o[p].(map[string]any)
		if !ok {
			return nil, false
		}
		o = next
	}
	return o, true
}

func namespaceOf(o map[string]any) string {
	metadata, _ := o["metadata"].(map[string]any)
	ns, _ := metadata["namespace"].(string)
	return ns
}

func nameOf(o map[string]any) string {
	metadata, _ := o["metadata"].(map[string]any)
	name, _ := metadata["name"].(string)
	return name
}
