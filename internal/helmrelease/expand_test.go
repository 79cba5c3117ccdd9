package helmrelease

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	appsv1alpha1 "github.com/flotilla-io/flotilla/api/apps/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/helmrelease/helmreleasetest"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

// demo is a chart with one ConfigMap that shows what the templates saw, a hook, a test and a CRD.
func demo(version string) helmreleasetest.Chart {
	return helmreleasetest.Chart{Name: "demo", Version: version, Values: map[string]any{"greeting": "hello"},
		Files: map[string]string{
			"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-cm
data:
  greeting: {{ .Values.greeting | quote }}
  release: "{{ .Release.Name }}/{{ .Release.Namespace }}"
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
  widgets: {{ .Capabilities.APIVersions.Has "example.com/v1/Widget" | quote }}
`,
			"templates/hook.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  annotations: {"helm.sh/hook": pre-install}
spec: {template: {spec: {restartPolicy: Never, containers: [{name: m, image: busybox}]}}}
`,
			"templates/tests/ping.yaml": `apiVersion: v1
kind: Pod
metadata:
  name: ping
  annotations: {"helm.sh/hook": test}
spec: {containers: [{name: p, image: busybox}]}
`,
			"crds/widgets.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
`,
		}}
}

func release(t *testing.T, spec appsv1alpha1.HelmReleaseSpec) *unstructured.Unstructured {
	t.Helper()
	hr := &appsv1alpha1.HelmRelease{TypeMeta: metav1.TypeMeta{APIVersion: appsv1alpha1.GroupVersion.String(), Kind: "HelmRelease"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web",
			Annotations: map[string]string{workv1alpha1.AnnotationTemplateGeneration: "3"}}, Spec: spec}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(hr)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}

func expander(_ *helmreleasetest.Repo, objs ...runtime.Object) *Expander {
	cluster := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "m1"}, Status: clusterv1alpha1.ClusterStatus{
		KubernetesVersion: "v1.31.4",
		APIEnablements:    []clusterv1alpha1.APIEnablement{{GroupVersion: "example.com/v1", Resources: []clusterv1alpha1.APIResource{{Name: "widgets", Kind: "Widget"}}}},
	}}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithRuntimeObjects(append(objs, cluster)...).Build()
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}, meta.RESTScopeRoot)
	// The test repositories listen on loopback, as a local fleet's may.
	return &Expander{Client: c, Mapper: mapper, Fetcher: &Fetcher{AllowLoopback: true}}
}

// TestExpandRefusesTheHubsOwnMachine: by default the hub fetches no chart from a loopback repository.
func TestExpandRefusesTheHubsOwnMachine(t *testing.T) {
	repo := helmreleasetest.NewRepo(t)
	repo.Add("demo", "1.0.0", helmreleasetest.Package(t, demo("1.0.0")))
	e := expander(repo)
	e.Fetcher = &Fetcher{}
	_, err := e.Expand(context.Background(), release(t, appsv1alpha1.HelmReleaseSpec{Repo: repo.URL, Chart: "demo", Version: "1.0.0"}), "m1")
	if err == nil || !strings.Contains(err.Error(), "is refused") {
		t.Fatalf("error %v, want the loopback repository refused", err)
	}
}

func TestExpandRendersTheChartForTheCluster(t *testing.T) {
	repo := helmreleasetest.NewRepo(t)
	repo.Add("demo", "1.0.0", helmreleasetest.Package(t, demo("1.0.0")))
	repo.Add("demo", "1.1.0+build.7", helmreleasetest.Package(t, demo("1.1.0+build.7")))
	e := expander(repo)
	values := &apiextensionsv1.JSON{Raw: []byte(`{"greeting":"bonjour"}`)}
	objs, err := e.Expand(context.Background(), release(t, appsv1alpha1.HelmReleaseSpec{Repo: repo.URL, Chart: "demo", Version: "1.1.0+build.7",
		Values: values, TargetNamespace: "apps"}), "m1")
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.GetKind()+"/"+o.GetName())
	}
	// No hook, no test, no CRD of crds/.
	if got := strings.Join(kinds, ","); got != "ConfigMap/web-cm" {
		t.Fatalf("objects %s", got)
	}
	cm := objs[0]
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	want := map[string]string{"greeting": "bonjour", "release": "web/apps", "kube": "v1.31.4", "widgets": "true"}
	for k, v := range want {
		if data[k] != v {
			t.Errorf("data.%s = %q, want %q", k, data[k], v)
		}
	}
	if cm.GetNamespace() != "apps" {
		t.Errorf("namespace %q", cm.GetNamespace())
	}
	labels := map[string]string{appsv1alpha1.LabelRelease: "web", appsv1alpha1.LabelReleaseNamespace: "apps",
		appsv1alpha1.LabelChart: "demo", appsv1alpha1.LabelChartVersion: "1.1.0_build.7"}
	for _, o := range objs {
		for k, v := range labels {
			if o.GetLabels()[k] != v {
				t.Errorf("%s: label %s=%q, want %q", o.GetName(), k, o.GetLabels()[k], v)
			}
		}
		if a := o.GetAnnotations(); a[workv1alpha1.AnnotationTemplateGeneration] != "3" || a[workv1alpha1.AnnotationExpandedVersion] != "1.1.0+build.7" {
			t.Errorf("%s: annotations %v", o.GetName(), a)
		}
	}
	// A second render (another cluster, or the next reconcile) reads the archive from the cache.
	if _, err := e.Expand(context.Background(), release(t, appsv1alpha1.HelmReleaseSpec{Repo: repo.URL, Chart: "demo", Version: "1.1.0+build.7"}), "m1"); err != nil {
		t.Fatal(err)
	}
	if n := repo.Gets("demo-1.1.0+build.7.tgz"); n != 1 {
		t.Errorf("archive fetched %d times, want 1", n)
	}
}

func TestExpandFromConfigMap(t *testing.T) {
	archive := helmreleasetest.Package(t, demo("2.0.0"))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "demo-chart"}, BinaryData: map[string][]byte{"chart.tgz": archive}}
	e := expander(nil, cm)
	objs, err := e.Expand(context.Background(), release(t, appsv1alpha1.HelmReleaseSpec{
		ConfigMapRef: &appsv1alpha1.ChartConfigMapReference{Name: "demo-chart"}}), "m1")
	if err != nil {
		t.Fatal(err)
	}
	last := objs[len(objs)-1]
	if last.GetName() != "web-cm" || last.GetNamespace() != "apps" || last.GetLabels()[appsv1alpha1.LabelChartVersion] != "2.0.0" {
		t.Fatalf("last object %s/%s labels %v", last.GetNamespace(), last.GetName(), last.GetLabels())
	}
}

func TestExpandSaysWhyItCannot(t *testing.T) {
	repo := helmreleasetest.NewRepo(t)
	repo.Add("demo", "1.0.0", helmreleasetest.Package(t, demo("1.0.0")))
	clusterRole := demo("1.0.2")
	clusterRole.Files["templates/role.yaml"] = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: reader}\n"
	repo.Add("demo", "1.0.2", helmreleasetest.Package(t, clusterRole))
	broken := demo("1.0.1")
	broken.Files["templates/bad.yaml"] = "kind: ConfigMap\nmetadata: {name: {{ .Values.missing.field }}}\n"
	repo.Add("demo", "1.0.1", helmreleasetest.Package(t, broken))
	cms := []runtime.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "empty"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "v2"}, BinaryData: map[string][]byte{"chart.tgz": helmreleasetest.Package(t, demo("2.0.0"))}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "junk"}, BinaryData: map[string][]byte{"chart.tgz": []byte("not a tgz")}},
	}
	for _, tc := range []struct {
		name string
		spec appsv1alpha1.HelmReleaseSpec
		want string
	}{
		{"unknown version", appsv1alpha1.HelmReleaseSpec{Repo: repo.URL, Chart: "demo", Version: "9.9.9"}, "has no chart demo version 9.9.9"},
		{"unknown chart", appsv1alpha1.HelmReleaseSpec{Repo: repo.URL, Chart: "nope", Version: "1.0.0"}, "has no chart nope"},
		{"repository down", appsv1alpha1.HelmReleaseSpec{Repo: repo.URL + "/missing", Chart: "demo", Version: "1.0.0"}, "404"},
		{"template error", appsv1alpha1.HelmReleaseSpec{Repo: repo.URL, Chart: "demo", Version: "1.0.1"}, "bad.yaml"},
		{"cluster-scoped object", appsv1alpha1.HelmReleaseSpec{Repo: repo.URL, Chart: "demo", Version: "1.0.2"},
			"outside the release's namespace apps, where a namespaced template places them all: ClusterRole reader (cluster-scoped)"},
		{"another namespace", appsv1alpha1.HelmReleaseSpec{Repo: repo.URL, Chart: "demo", Version: "1.0.0", TargetNamespace: "kube-system"},
			"ConfigMap web-cm (namespace kube-system)"},
		{"no ConfigMap", appsv1alpha1.HelmReleaseSpec{ConfigMapRef: &appsv1alpha1.ChartConfigMapReference{Name: "gone"}}, "not found"},
		{"no key", appsv1alpha1.HelmReleaseSpec{ConfigMapRef: &appsv1alpha1.ChartConfigMapReference{Name: "empty"}}, "no binaryData"},
		{"not an archive", appsv1alpha1.HelmReleaseSpec{ConfigMapRef: &appsv1alpha1.ChartConfigMapReference{Name: "junk"}}, "loading ConfigMap junk"},
		{"other version", appsv1alpha1.HelmReleaseSpec{ConfigMapRef: &appsv1alpha1.ChartConfigMapReference{Name: "v2"}, Version: "1.0.0"}, "version 2.0.0, not 1.0.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := expander(repo, cms...).Expand(context.Background(), release(t, tc.spec), "m1")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}
