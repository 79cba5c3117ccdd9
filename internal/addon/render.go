package addon

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	addonv1alpha1 "github.com/flotilla-io/flotilla/api/addon/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// The variables the hub fills in every add-on's template; an AddOnConfig's customizedVariables add others.
const (
	VariableClusterName         = "CLUSTER_NAME"
	VariableInstallNamespace    = "INSTALL_NAMESPACE"
	VariableHubURL              = "HUB_URL"
	VariableHubKubeconfigSecret = "HUB_KUBECONFIG_SECRET"
)

// BuiltinVariables are the variables the hub fills; a customized variable of the same name is refused at
// admission.
var BuiltinVariables = []string{VariableClusterName, VariableInstallNamespace, VariableHubURL, VariableHubKubeconfigSecret}

// variable finds what is left of a variable in a rendered string.
var variable = regexp.MustCompile(`\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}`)

// clusterScoped are the kinds that take no namespace; every other kind of a manifest without a namespace is
// put in the install namespace. The hub cannot ask the member which kinds are namespaced, so the list holds
// the cluster-scoped kinds an add-on installs.
var clusterScoped = map[string]bool{
	"Namespace": true, "ClusterRole": true, "ClusterRoleBinding": true, "CustomResourceDefinition": true,
	"PriorityClass": true, "StorageClass": true, "ValidatingWebhookConfiguration": true,
	"MutatingWebhookConfiguration": true, "APIService": true, "PersistentVolume": true, "CSIDriver": true,
	"IngressClass": true, "RuntimeClass": true, "ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true,
}

// Input is what one cluster's rendering of an add-on reads.
type Input struct {
	AddOn        *addonv1alpha1.AddOn
	ClusterAddOn *addonv1alpha1.ClusterAddOn
	Cluster      string
	HubURL       string
	// Config is the AddOnConfig the cluster runs with; nil when the add-on takes none.
	Config *addonv1alpha1.AddOnConfigSpec
}

// Rendered is an add-on's Work content for one cluster.
type Rendered struct {
	// Namespace is the install namespace.
	Namespace string
	// Manifests are the Work's manifests, the install Namespace first.
	Manifests []map[string]any
	// Hash names the content: the cluster's add-on revision.
	Hash string
}

// Render renders an add-on's template for one cluster: the install Namespace first, then every manifest with
// its variables replaced, its namespace defaulted to the install namespace, its images rewritten by the
// config's registries and its pod templates given the config's node placement. An error says, in plain
// words, what in the template or config keeps it from rendering (a manifest that is not an object, a
// variable nobody fills).
func Render(in Input) (*Rendered, error) {
	ns := addonv1alpha1.InstallNamespaceOf(in.AddOn, in.ClusterAddOn)
	vars := map[string]string{}
	var config addonv1alpha1.AddOnConfigSpec
	if in.Config != nil {
		config = *in.Config
	}
	for _, v := range config.CustomizedVariables {
		vars[v.Name] = v.Value
	}
	vars[VariableClusterName] = in.Cluster
	vars[VariableInstallNamespace] = ns
	vars[VariableHubURL] = in.HubURL
	vars[VariableHubKubeconfigSecret] = addonv1alpha1.CredentialSecretName(in.AddOn.Name)

	first := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}
	out := &Rendered{Namespace: ns, Manifests: []map[string]any{first}}
	for i, raw := range in.AddOn.Spec.Template.Manifests {
		m, err := manifest(raw.RawExtension, i)
		if err != nil {
			return nil, err
		}
		replaced, err := replace(m, vars, i)
		if err != nil {
			return nil, err
		}
		m = replaced.(map[string]any)
		meta, _ := m["metadata"].(map[string]any)
		if meta == nil {
			return nil, fmt.Errorf("template manifest %d has no metadata", i)
		}
		kind, _ := m["kind"].(string)
		if kind == "Namespace" && meta["name"] == ns {
			out.Manifests[0] = m // the template's own install Namespace, with its labels, stays first
			continue
		}
		if _, set := meta["namespace"]; !set && !clusterScoped[kind] {
			meta["namespace"] = ns
		}
		podSpecs(m, func(spec map[string]any) { place(spec, config) })
		out.Manifests = append(out.Manifests, m)
	}
	// The install Namespace is the add-on's: disabling it deletes the Namespace with what is in it. One the
	// member had before is adopted, and the executor never deletes an adopted Namespace.
	nsMeta := out.Manifests[0]["metadata"].(map[string]any)
	annotations, _ := nsMeta["annotations"].(map[string]any)
	if annotations == nil {
		annotations = map[string]any{}
		nsMeta["annotations"] = annotations
	}
	if _, set := annotations[workv1alpha1.AnnotationDeletionPolicy]; !set {
		annotations[workv1alpha1.AnnotationDeletionPolicy] = workv1alpha1.DeletionPolicyDelete
	}
	content, err := json.Marshal(out.Manifests)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(content)
	out.Hash = hex.EncodeToString(sum[:8])
	return out, nil
}

// manifest reads one template manifest as an object.
func manifest(raw runtime.RawExtension, i int) (map[string]any, error) {
	var v any
	if err := json.Unmarshal(raw.Raw, &v); err != nil {
		return nil, fmt.Errorf("template manifest %d does not parse: %v", i, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("template manifest %d is not an object", i)
	}
	if k, _ := m["kind"].(string); k == "" {
		return nil, fmt.Errorf("template manifest %d has no kind", i)
	}
	return m, nil
}

// replace replaces the variables of every string in v, and refuses a variable left unfilled.
func replace(v any, vars map[string]string, i int) (any, error) {
	switch t := v.(type) {
	case string:
		var unknown []string
		s := variable.ReplaceAllStringFunc(t, func(match string) string {
			name := variable.FindStringSubmatch(match)[1]
			if value, ok := vars[name]; ok {
				return value
			}
			unknown = append(unknown, name)
			return match
		})
		if len(unknown) > 0 {
			slices.Sort(unknown)
			return nil, fmt.Errorf("template manifest %d uses {{%s}}, which no variable fills (the hub's are %s; others come from the AddOnConfig's customizedVariables)",
				i, strings.Join(slices.Compact(unknown), "}}, {{"), strings.Join(BuiltinVariables, ", "))
		}
		return s, nil
	case map[string]any:
		for k, e := range t {
			r, err := replace(e, vars, i)
			if err != nil {
				return nil, err
			}
			t[k] = r
		}
	case []any:
		for j, e := range t {
			r, err := replace(e, vars, i)
			if err != nil {
				return nil, err
			}
			t[j] = r
		}
	}
	return v, nil
}

// podSpecs calls f with every pod spec in v: every object with a list of containers (a Pod's spec, a
// workload's template spec, a CronJob's job template).
func podSpecs(v any, f func(map[string]any)) {
	switch t := v.(type) {
	case map[string]any:
		if _, ok := t["containers"].([]any); ok {
			f(t)
			return
		}
		for _, e := range t {
			podSpecs(e, f)
		}
	case []any:
		for _, e := range t {
			podSpecs(e, f)
		}
	}
}

// place rewrites a pod spec's images by the config's registries and sets its node placement.
func place(spec map[string]any, config addonv1alpha1.AddOnConfigSpec) {
	for _, list := range []string{"initContainers", "containers", "ephemeralContainers"} {
		containers, _ := spec[list].([]any)
		for _, c := range containers {
			if c, ok := c.(map[string]any); ok {
				if image, ok := c["image"].(string); ok {
					c["image"] = mirror(image, config.Registries)
				}
			}
		}
	}
	np := config.NodePlacement
	if np == nil {
		return
	}
	if len(np.NodeSelector) > 0 {
		sel := map[string]any{}
		for k, v := range np.NodeSelector {
			sel[k] = v
		}
		spec["nodeSelector"] = sel
	}
	if len(np.Tolerations) > 0 {
		spec["tolerations"] = tolerations(np.Tolerations)
	}
}

// mirror rewrites an image by the first registry whose source it starts with.
func mirror(image string, registries []addonv1alpha1.ImageMirror) string {
	for _, r := range registries {
		if rest, ok := strings.CutPrefix(image, r.Source); ok {
			return r.Mirror + rest
		}
	}
	return image
}

func tolerations(ts []corev1.Toleration) []any {
	out := make([]any, 0, len(ts))
	for _, t := range ts {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&t)
		if err == nil {
			out = append(out, u)
		}
	}
	return out
}

// SpecHash is the hash of a configuration object's spec, as status.configReferences reports it.
func SpecHash(spec any) string {
	content, _ := json.Marshal(spec)
	sum := sha256.Sum256(content)
	return hex.EncodeToString(sum[:8])
}
