package override

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

func manifest(t testing.TB, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := utiljson.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

const web = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop","labels":{"app":"web","tier":"front"}},
	"spec":{"replicas":2,"template":{"spec":{"initContainers":[{"name":"init","image":"busybox"}],
	"containers":[{"name":"web","image":"docker.io/library/nginx:1.27","command":["nginx"],"args":["-g","daemon off;"]}]}}}}`

func TestImageOverride(t *testing.T) {
	tests := []struct {
		image string
		o     policyv1alpha1.ImageOverrider
		want  string
	}{
		{"nginx:1.27", policyv1alpha1.ImageOverrider{Component: "Registry", Operator: "add", Value: "mirror.eu.example.com"}, "mirror.eu.example.com/nginx:1.27"},
		{"docker.io/library/nginx:1.27", policyv1alpha1.ImageOverrider{Component: "Registry", Operator: "replace", Value: "registry.cn"}, "registry.cn/library/nginx:1.27"},
		{"docker.io/library/nginx:1.27", policyv1alpha1.ImageOverrider{Component: "Registry", Operator: "remove"}, "library/nginx:1.27"},
		{"localhost:5000/app@sha256:abc", policyv1alpha1.ImageOverrider{Component: "Repository", Operator: "replace", Value: "other"}, "localhost:5000/other@sha256:abc"},
		{"nginx", policyv1alpha1.ImageOverrider{Component: "Tag", Operator: "add", Value: "1.28"}, "nginx:1.28"},
		{"nginx:1.27", policyv1alpha1.ImageOverrider{Component: "Tag", Operator: "remove"}, "nginx"},
		{"registry.k8s.io:443/pause:3.10", policyv1alpha1.ImageOverrider{Component: "Tag", Operator: "replace", Value: "3.11"}, "registry.k8s.io:443/pause:3.11"},
	}
	for _, tt := range tests {
		got, err := overrideImage(tt.image, tt.o)
		if err != nil || got != tt.want {
			t.Errorf("%s %s %s: got %q %v, want %q", tt.image, tt.o.Operator, tt.o.Component, got, err, tt.want)
		}
	}
	if _, err := overrideImage("nginx", policyv1alpha1.ImageOverrider{Component: "Repository", Operator: "remove"}); err == nil {
		t.Error("removing the repository succeeded")
	}
}

func rawJSON(s string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(s)} }

func TestApply(t *testing.T) {
	eu := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "eu-1"}, Spec: clusterv1alpha1.ClusterSpec{Region: "eu-west-1"}}
	us := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "us-1"}, Spec: clusterv1alpha1.ClusterSpec{Region: "us-east-1"}}
	policies := []Policy{
		{Namespace: "shop", Name: "ns-policy", Spec: &policyv1alpha1.OverrideSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}},
			OverrideRules: []policyv1alpha1.RuleWithCluster{{
				TargetCluster: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"eu-1"}},
				Overriders: policyv1alpha1.Overriders{
					Plaintext:            []policyv1alpha1.PlaintextOverrider{{Path: "/spec/replicas", Operator: "replace", Value: rawJSON("5")}},
					ImageOverrider:       []policyv1alpha1.ImageOverrider{{Component: "Registry", Operator: "replace", Value: "mirror.eu"}},
					ArgsOverrider:        []policyv1alpha1.CommandArgsOverrider{{ContainerName: "web", Operator: "add", Value: []string{"--region=eu"}}},
					CommandOverrider:     []policyv1alpha1.CommandArgsOverrider{{ContainerName: "web", Operator: "remove", Value: []string{"nginx"}}},
					LabelsOverrider:      []policyv1alpha1.LabelAnnotationOverrider{{Operator: "remove", Value: map[string]string{"tier": ""}}},
					AnnotationsOverrider: []policyv1alpha1.LabelAnnotationOverrider{{Operator: "add", Value: map[string]string{"region": "eu"}}},
				},
			}},
		}},
		{Name: "cluster-wide", Spec: &policyv1alpha1.OverrideSpec{OverrideRules: []policyv1alpha1.RuleWithCluster{{
			Overriders: policyv1alpha1.Overriders{LabelsOverrider: []policyv1alpha1.LabelAnnotationOverrider{{Operator: "add", Value: map[string]string{"fleet": "yes"}}}},
		}}}},
		{Namespace: "other", Name: "elsewhere", Spec: &policyv1alpha1.OverrideSpec{OverrideRules: []policyv1alpha1.RuleWithCluster{{
			Overriders: policyv1alpha1.Overriders{LabelsOverrider: []policyv1alpha1.LabelAnnotationOverrider{{Operator: "add", Value: map[string]string{"wrong": "ns"}}}},
		}}}},
	}
	Sort(policies)
	if policies[0].Name != "cluster-wide" {
		t.Fatalf("cluster policies must come first: %v", policies[0].ID())
	}

	m := manifest(t, web)
	applied, err := Apply(m, eu, policies)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(applied, ",") != "ClusterOverridePolicy/cluster-wide,OverridePolicy/shop/ns-policy" {
		t.Fatalf("applied %v", applied)
	}
	replicas, _, _ := unstructured.NestedInt64(m.Object, "spec", "replicas")
	containers, _, _ := unstructured.NestedSlice(m.Object, "spec", "template", "spec", "containers")
	c := containers[0].(map[string]any)
	inits, _, _ := unstructured.NestedSlice(m.Object, "spec", "template", "spec", "initContainers")
	if replicas != 5 || c["image"] != "mirror.eu/library/nginx:1.27" || inits[0].(map[string]any)["image"] != "mirror.eu/busybox" {
		t.Fatalf("replicas %d, images %v %v", replicas, c["image"], inits[0])
	}
	if args := c["args"].([]any); len(args) != 3 || args[2] != "--region=eu" || len(c["command"].([]any)) != 0 {
		t.Fatalf("command %v args %v", c["command"], c["args"])
	}
	if l := m.GetLabels(); l["tier"] != "" || l["fleet"] != "yes" || l["wrong"] != "" || m.GetAnnotations()["region"] != "eu" {
		t.Fatalf("labels %v annotations %v", l, m.GetAnnotations())
	}

	m = manifest(t, web)
	if applied, _ := Apply(m, us, policies); len(applied) != 1 {
		t.Fatalf("only the cluster-wide policy targets us-1: %v", applied)
	}
}

func TestApplyIsAllOrNothing(t *testing.T) {
	bad := []Policy{{Name: "bad", Spec: &policyv1alpha1.OverrideSpec{OverrideRules: []policyv1alpha1.RuleWithCluster{{
		Overriders: policyv1alpha1.Overriders{
			LabelsOverrider: []policyv1alpha1.LabelAnnotationOverrider{{Operator: "add", Value: map[string]string{"half": "applied"}}},
			Plaintext:       []policyv1alpha1.PlaintextOverrider{{Path: "/spec/missing/deep", Operator: "replace", Value: rawJSON(`1`)}},
		},
	}}}}}
	m := manifest(t, web)
	_, err := Apply(m, &clusterv1alpha1.Cluster{}, bad)
	if err == nil || !strings.Contains(err.Error(), "ClusterOverridePolicy/bad, overrideRules[0]: plaintext") {
		t.Fatalf("error = %v", err)
	}
	if m.GetLabels()["half"] != "" {
		t.Fatal("a failed override left a half-applied manifest")
	}
}

func TestFieldOverrider(t *testing.T) {
	cm := manifest(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{
		"config.yaml":"server:\n  port: 80\n  host: a\n","config.json":"{\"debug\":false}"}}`)
	err := applyOverriders(cm, &policyv1alpha1.Overriders{FieldOverrider: []policyv1alpha1.FieldOverrider{
		{FieldPath: "/data/config.yaml", YAML: []policyv1alpha1.JSONPatchOperation{
			{SubPath: "/server/port", Operator: "replace", Value: rawJSON("8443")}, {SubPath: "/server/host", Operator: "remove"}}},
		{FieldPath: "/data/config.json", JSON: []policyv1alpha1.JSONPatchOperation{{SubPath: "/debug", Operator: "replace", Value: rawJSON("true")}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	if data["config.yaml"] != "server:\n  port: 8443\n" || data["config.json"] != `{"debug":true}` {
		t.Fatalf("data %q", data)
	}
	err = applyOverriders(cm, &policyv1alpha1.Overriders{FieldOverrider: []policyv1alpha1.FieldOverrider{
		{FieldPath: "/data/missing", JSON: []policyv1alpha1.JSONPatchOperation{{SubPath: "/a", Operator: "remove"}}}}})
	if err == nil || !strings.Contains(err.Error(), "/data/missing does not exist") {
		t.Fatalf("error = %v", err)
	}
}

// TestApplyKeepsIdentity: overrides that would turn the manifest into another object are refused by Apply,
// even when admission did not see them (policies admitted before the rule, or paths it cannot foresee).
func TestApplyKeepsIdentity(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    policyv1alpha1.Overriders
		want string
	}{
		{"name by plaintext", policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{
			{Path: "/metadata/name", Operator: "replace", Value: rawJSON(`"kube-proxy"`)}}}, `metadata.name ("web" to "kube-proxy")`},
		{"namespace by plaintext", policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{
			{Path: "/metadata/namespace", Operator: "replace", Value: rawJSON(`"kube-system"`)}}}, `metadata.namespace ("shop" to "kube-system")`},
		{"namespace removed", policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{
			{Path: "/metadata/namespace", Operator: "remove"}}}, `metadata.namespace ("shop" to "")`},
		{"whole metadata", policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{
			{Path: "/metadata", Operator: "replace", Value: rawJSON(`{"name":"other","namespace":"shop"}`)}}}, `metadata.name ("web" to "other")`},
		{"kind", policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{
			{Path: "/kind", Operator: "replace", Value: rawJSON(`"DaemonSet"`)}}}, `kind ("Deployment" to "DaemonSet")`},
		{"group", policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{
			{Path: "/apiVersion", Operator: "replace", Value: rawJSON(`"extensions/v1beta1"`)}}}, `the API group ("apps" to "extensions")`},
		{"name through an image overrider's path", policyv1alpha1.Overriders{ImageOverrider: []policyv1alpha1.ImageOverrider{
			{Predicate: &policyv1alpha1.ImagePredicate{Path: "/metadata/name"}, Component: "Repository", Operator: "replace", Value: "api"}}},
			`metadata.name ("web" to "api")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := manifest(t, web)
			policies := []Policy{{Namespace: "shop", Name: "old", Spec: &policyv1alpha1.OverrideSpec{OverrideRules: []policyv1alpha1.RuleWithCluster{{Overriders: tc.o}}}}}
			_, err := Apply(m, &clusterv1alpha1.Cluster{}, policies)
			if err == nil || !strings.Contains(err.Error(), "OverridePolicy/shop/old, overrideRules[0]: an override may not change "+tc.want) {
				t.Fatalf("error = %v", err)
			}
			if m.GetName() != "web" || m.GetNamespace() != "shop" || m.GetKind() != "Deployment" {
				t.Fatalf("the manifest changed: %s %s/%s", m.GetKind(), m.GetNamespace(), m.GetName())
			}
		})
	}
	// A version of the same group is the same object.
	m := manifest(t, web)
	sameGroup := []Policy{{Name: "v", Spec: &policyv1alpha1.OverrideSpec{OverrideRules: []policyv1alpha1.RuleWithCluster{{Overriders: policyv1alpha1.Overriders{
		Plaintext: []policyv1alpha1.PlaintextOverrider{{Path: "/apiVersion", Operator: "replace", Value: rawJSON(`"apps/v1beta2"`)}}}}}}}}
	if _, err := Apply(m, &clusterv1alpha1.Cluster{}, sameGroup); err != nil {
		t.Fatal(err)
	}
}

// TestApplyOrder: cluster policies first, then from the least to the most precise selector, then by name, so
// the most precise policy has the last word whatever the names.
func TestApplyOrder(t *testing.T) {
	setWinner := func(ns, name string, selectors ...policyv1alpha1.ResourceSelector) Policy {
		return Policy{Namespace: ns, Name: name, Spec: &policyv1alpha1.OverrideSpec{ResourceSelectors: selectors,
			OverrideRules: []policyv1alpha1.RuleWithCluster{{Overriders: policyv1alpha1.Overriders{
				LabelsOverrider: []policyv1alpha1.LabelAnnotationOverrider{{Operator: "add", Value: map[string]string{"winner": name}}}}}}}}
	}
	byName := policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
	byLabel := policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "front"}}}
	byKind := policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment"}
	policies := []Policy{
		setWinner("shop", "a-by-name", byName),
		setWinner("shop", "b-by-labels", byLabel),
		setWinner("shop", "c-by-kind", byKind),
		setWinner("shop", "d-everything"),
		setWinner("", "a-cluster-by-name", byName),
		setWinner("", "z-cluster-by-kind", byKind),
	}
	Sort(policies)
	m := manifest(t, web)
	applied, err := Apply(m, &clusterv1alpha1.Cluster{}, policies)
	if err != nil {
		t.Fatal(err)
	}
	want := "ClusterOverridePolicy/z-cluster-by-kind,ClusterOverridePolicy/a-cluster-by-name," +
		"OverridePolicy/shop/c-by-kind,OverridePolicy/shop/d-everything,OverridePolicy/shop/b-by-labels,OverridePolicy/shop/a-by-name"
	if got := strings.Join(applied, ","); got != want {
		t.Fatalf("applied in the order\n%s\nwant\n%s", got, want)
	}
	if got := m.GetLabels()["winner"]; got != "a-by-name" {
		t.Fatalf("the last word went to %s, not to the most precise namespaced policy", got)
	}
}
