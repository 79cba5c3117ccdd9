package addon

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	addonv1alpha1 "github.com/flotilla-io/flotilla/api/addon/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

func testAddOn(manifests ...string) *addonv1alpha1.AddOn {
	a := &addonv1alpha1.AddOn{ObjectMeta: metav1.ObjectMeta{Name: "observer"}}
	for _, m := range manifests {
		a.Spec.Template.Manifests = append(a.Spec.Template.Manifests, workv1alpha1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(m)}})
	}
	return a
}

const deployment = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"agent"},"spec":{"template":{"spec":{
"containers":[{"name":"a","image":"quay.io/obs/agent:1","args":["--cluster={{CLUSTER_NAME}}","--hub={{HUB_URL}}","--secret={{HUB_KUBECONFIG_SECRET}}","--level={{LOG_LEVEL}}"]}]}}}}`

func TestRender(t *testing.T) {
	config := &addonv1alpha1.AddOnConfigSpec{
		CustomizedVariables: []addonv1alpha1.CustomizedVariable{{Name: "LOG_LEVEL", Value: "debug"}},
		Registries:          []addonv1alpha1.ImageMirror{{Source: "quay.io/obs", Mirror: "mirror.local/obs"}},
		NodePlacement: &addonv1alpha1.NodePlacement{NodeSelector: map[string]string{"role": "infra"},
			Tolerations: []corev1.Toleration{{Key: "infra", Operator: corev1.TolerationOpExists}}},
	}
	a := testAddOn(deployment, `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"obs-{{INSTALL_NAMESPACE}}"}}`)
	out, err := Render(Input{AddOn: a, Cluster: "east", HubURL: "https://hub:6443", Config: config})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Manifests) != 3 || out.Manifests[0]["kind"] != "Namespace" || out.Namespace != "flotilla-addon-observer" {
		t.Fatalf("manifests %v, namespace %s: want the install Namespace first, then the two", out.Manifests, out.Namespace)
	}
	if ns, _ := json.Marshal(out.Manifests[0]); !strings.Contains(string(ns), `"work.flotilla.io/deletion-policy":"Delete"`) {
		t.Errorf("install Namespace %s: want it deleted with the add-on", ns)
	}
	raw, _ := json.Marshal(out.Manifests[1])
	for _, want := range []string{`"namespace":"flotilla-addon-observer"`, `--cluster=east`, `--hub=https://hub:6443`, `--secret=observer-hub-kubeconfig`,
		`--level=debug`, `"image":"mirror.local/obs/agent:1"`, `"nodeSelector":{"role":"infra"}`, `"key":"infra"`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("Deployment %s lacks %s", raw, want)
		}
	}
	role, _ := json.Marshal(out.Manifests[2])
	if strings.Contains(string(role), `"namespace"`) || !strings.Contains(string(role), "obs-flotilla-addon-observer") {
		t.Errorf("ClusterRole %s: want no namespace and the install namespace in its name", role)
	}
	other, err := Render(Input{AddOn: a, Cluster: "west", HubURL: "https://hub:6443", Config: config})
	if err != nil || other.Hash == out.Hash {
		t.Errorf("another cluster renders to the same revision %s (%v)", out.Hash, err)
	}
	again, _ := Render(Input{AddOn: a, Cluster: "east", HubURL: "https://hub:6443", Config: config})
	if again.Hash != out.Hash {
		t.Errorf("the same input renders to revisions %s and %s", out.Hash, again.Hash)
	}
	// The ClusterAddOn's install namespace wins, and a template Namespace of that name is the first manifest.
	ca := &addonv1alpha1.ClusterAddOn{Spec: addonv1alpha1.ClusterAddOnSpec{InstallNamespace: "obs"}}
	own, err := Render(Input{AddOn: testAddOn(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"obs","labels":{"team":"x"}}}`), ClusterAddOn: ca, Cluster: "east"})
	if err != nil || len(own.Manifests) != 1 || own.Manifests[0]["metadata"].(map[string]any)["labels"] == nil {
		t.Errorf("got %v (%v), want the template's own Namespace obs alone", own.Manifests, err)
	}
}

func TestRenderRefuses(t *testing.T) {
	for name, tt := range map[string]struct {
		manifest string
		want     string
	}{
		"a variable nobody fills": {deployment, "template manifest 0 uses {{LOG_LEVEL}}, which no variable fills"},
		"a list":                  {`[1,2]`, "template manifest 0 is not an object"},
		"a string":                {`"x"`, "template manifest 0 is not an object"},
		"no kind":                 {`{"apiVersion":"v1","metadata":{"name":"x"}}`, "template manifest 0 has no kind"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Render(Input{AddOn: testAddOn(tt.manifest), Cluster: "east"})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}
