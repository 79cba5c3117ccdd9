package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/flotilla-io/flotilla/api/apps/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/helmrelease/helmreleasetest"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// settingsChart renders one ConfigMap that says which chart version and greeting it was rendered with; its
// version "broken" fails to render.
func settingsChart(version string, broken bool) helmreleasetest.Chart {
	files := map[string]string{"templates/settings.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-settings-{{ .Values.cluster }}
data:
  chart: {{ .Chart.Version | quote }}
  greeting: {{ .Values.greeting | quote }}
  namespace: {{ .Release.Namespace | quote }}
`}
	if broken {
		files["templates/broken.yaml"] = "kind: ConfigMap\nmetadata: {name: {{ .Values.nothing.here }}}\n"
	}
	return helmreleasetest.Chart{Name: "settings", Version: version, Values: map[string]any{"greeting": "hello"}, Files: files}
}

// releaseSettings reads the ConfigMap the release rendered for a cluster. Both members of this test are the
// test's API server, and the release's namespace the only one a namespaced release installs into: an
// override gives each cluster its own value of cluster, which names the object.
func releaseSettings(namespace, cluster string) (map[string]string, error) {
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: "web-settings-" + cluster}, cm); err != nil {
		return nil, err
	}
	return cm.Data, nil
}

// TestHelmReleaseReachesClustersWithTheirValuesAndRollsOut: a HelmRelease of a chart served by an HTTP
// repository reaches two push members, one with a value overridden; an upgrade to a new chart version rolls
// out one cluster after the other (maxConcurrency 1); the release's status lists each cluster's chart version;
// a chart version that does not render says so in Rendered, and the members keep the version they run.
func TestHelmReleaseReachesClustersWithTheirValuesAndRollsOut(t *testing.T) {
	ctx := context.Background()
	const ns = "helm-release"
	m1, m2 := "helm-m1", "helm-m2"
	repo := helmreleasetest.NewRepo(t)
	repo.Add("settings", "1.0.0", helmreleasetest.Package(t, settingsChart("1.0.0", false)))
	repo.Add("settings", "2.0.0", helmreleasetest.Package(t, settingsChart("2.0.0", false)))
	repo.Add("settings", "3.0.0", helmreleasetest.Package(t, settingsChart("3.0.0", true)))
	token := memberToken(t)
	for _, c := range []string{m1, m2} {
		pushCluster(t, c, map[string][]byte{"token": []byte(token), "caBundle": env.Config.CAData}, nil)
		t.Cleanup(func() { _ = env.Client.Delete(ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: c}}) })
	}
	createNamespace(t, ns)

	// Each cluster gets its own object name (both are this API server), and m2 another greeting.
	plaintext := func(path, value string) policyv1alpha1.PlaintextOverrider {
		return policyv1alpha1.PlaintextOverrider{Path: path, Operator: policyv1alpha1.OverriderOpAdd, Value: &apiextensionsv1.JSON{Raw: []byte(value)}}
	}
	create(t, &policyv1alpha1.OverridePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "per-cluster"}, Spec: policyv1alpha1.OverrideSpec{
		ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: appsv1alpha1.GroupVersion.String(), Kind: "HelmRelease"}},
		OverrideRules: []policyv1alpha1.RuleWithCluster{
			{TargetCluster: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{m1}},
				Overriders: policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{plaintext("/spec/values/cluster", `"helm-m1"`)}}},
			{TargetCluster: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{m2}},
				Overriders: policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{
					plaintext("/spec/values/cluster", `"helm-m2"`), plaintext("/spec/values/greeting", `"bonjour"`)}}},
		}}})
	policy := tolerantPolicy(ns, "web", []string{m1, m2})
	policy.Spec.ResourceSelectors = []policyv1alpha1.ResourceSelector{{APIVersion: appsv1alpha1.GroupVersion.String(), Kind: "HelmRelease", Name: "web"}}
	policy.Spec.Rollout = &policyv1alpha1.RolloutStrategy{Type: policyv1alpha1.RolloutProgressive, Progressive: &policyv1alpha1.ProgressiveRollout{
		MaxConcurrency: ptr.To(intstr.FromInt32(1)), MinSuccessTime: metav1.Duration{Duration: 2 * time.Second}}}
	create(t, policy)
	hr := &appsv1alpha1.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: appsv1alpha1.HelmReleaseSpec{
		Repo: repo.URL, Chart: "settings", Version: "1.0.0",
		Values: &apiextensionsv1.JSON{Raw: []byte(`{"greeting":"hello"}`)}}}
	create(t, hr)
	t.Cleanup(func() { // on failure, say where the release stands
		if !t.Failed() {
			return
		}
		b := &workv1alpha1.ResourceBindingList{}
		_ = env.Client.List(ctx, b, client.InNamespace(ns))
		for _, x := range b.Items {
			t.Logf("binding %s spec.clusters %+v status %+v", x.Name, x.Spec.Clusters, x.Status)
		}
		ws := &workv1alpha1.WorkList{}
		_ = env.Client.List(ctx, ws)
		for _, w := range ws.Items {
			if strings.HasPrefix(w.Namespace, "flotilla-cluster-helm") {
				t.Logf("work %s/%s: %d manifests, status %+v", w.Namespace, w.Name, len(w.Spec.Workload.Manifests), w.Status)
			}
		}
		got := &appsv1alpha1.HelmRelease{}
		_ = env.Client.Get(ctx, client.ObjectKeyFromObject(hr), got)
		t.Logf("release status %+v", got.Status)
		for _, c := range []string{m1, m2} {
			cl := &clusterv1alpha1.Cluster{}
			_ = env.Client.Get(ctx, client.ObjectKey{Name: c}, cl)
			t.Logf("cluster %s: %+v taints %+v", c, cl.Status.Conditions, cl.Spec.Taints)
		}
	})

	waitSettings := func(cluster, chart, greeting string) {
		t.Helper()
		testenv.Eventually(t, hangGuard, fmt.Sprintf("%s running chart %s with greeting %s", cluster, chart, greeting), func() error {
			data, err := releaseSettings(ns, cluster)
			if err != nil {
				return err
			}
			want := map[string]string{"chart": chart, "greeting": greeting, "namespace": ns}
			for k, v := range want {
				if data[k] != v {
					return fmt.Errorf("data %v", data)
				}
			}
			return nil
		})
	}
	waitSettings(m1, "1.0.0", "hello")
	waitSettings(m2, "1.0.0", "bonjour")
	releaseStatus := func(what string, check func(*appsv1alpha1.HelmRelease) error) *appsv1alpha1.HelmRelease {
		t.Helper()
		got := &appsv1alpha1.HelmRelease{}
		testenv.Eventually(t, hangGuard, what, func() error {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(hr), got); err != nil {
				return err
			}
			return check(got)
		})
		return got
	}
	versions := func(want string) func(*appsv1alpha1.HelmRelease) error {
		return func(r *appsv1alpha1.HelmRelease) error {
			if len(r.Status.Clusters) != 2 {
				return fmt.Errorf("clusters %+v", r.Status.Clusters)
			}
			for _, c := range r.Status.Clusters {
				if c.ChartVersion != want || !c.Applied || c.Health != string(workv1alpha1.ResourceHealthy) || c.Objects != 1 {
					return fmt.Errorf("clusters %+v", r.Status.Clusters)
				}
			}
			if !meta.IsStatusConditionTrue(r.Status.Conditions, appsv1alpha1.ConditionRendered) ||
				!meta.IsStatusConditionTrue(r.Status.Conditions, workv1alpha1.TemplateConditionPropagated) {
				return fmt.Errorf("conditions %+v", r.Status.Conditions)
			}
			return nil
		}
	}
	releaseStatus("the release's status showing chart 1.0.0 healthy in both clusters", versions("1.0.0"))

	// The upgrade: one cluster runs 2.0.0 (for minSuccessTime) while the other still runs 1.0.0, and the
	// second never runs 2.0.0 before the first.
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"version":"2.0.0"}}`))
	if err := env.Client.Patch(ctx, hr, patch); err != nil {
		t.Fatal(err)
	}
	first, sawOneAhead := "", false
	testenv.Eventually(t, hangGuard, "both clusters on chart 2.0.0, one after the other", func() error {
		d1, err1 := releaseSettings(ns, m1)
		d2, err2 := releaseSettings(ns, m2)
		if err1 != nil || err2 != nil {
			return fmt.Errorf("%v, %v", err1, err2)
		}
		on := map[string]bool{m1: d1["chart"] == "2.0.0", m2: d2["chart"] == "2.0.0"}
		switch {
		case on[m1] && on[m2]:
			if !sawOneAhead {
				t.Fatal("both clusters changed to 2.0.0 at once")
			}
			return nil
		case on[m1] || on[m2]:
			ahead := m1
			if on[m2] {
				ahead = m2
			}
			if first != "" && first != ahead {
				t.Fatalf("%s ran 2.0.0 first, then %s did while %s went back", first, ahead, first)
			}
			first, sawOneAhead = ahead, true
		}
		return fmt.Errorf("m1 %s, m2 %s", d1["chart"], d2["chart"])
	})
	if d2, _ := releaseSettings(ns, m2); d2["greeting"] != "bonjour" {
		t.Errorf("m2's greeting after the upgrade: %q", d2["greeting"])
	}
	releaseStatus("the release's status showing chart 2.0.0 healthy in both clusters", versions("2.0.0"))
	// The rollout completes once the last cluster was healthy for minSuccessTime: only then is 2.0.0 the
	// stable revision the clusters a later rollout has not reached keep.
	bindingKey := client.ObjectKey{Namespace: ns, Name: workv1alpha1.BindingName(appsv1alpha1.HelmReleaseKind, "web")}
	b := &workv1alpha1.ResourceBinding{}
	testenv.Eventually(t, hangGuard, "the upgrade's rollout complete", func() error {
		if err := env.Client.Get(ctx, bindingKey, b); err != nil {
			return err
		}
		if st := b.Status.Rollout; st == nil || st.StableRevision != 2 || !meta.IsStatusConditionTrue(b.Status.Conditions, workv1alpha1.ConditionRolloutComplete) {
			return fmt.Errorf("rollout %+v", b.Status.Rollout)
		}
		return nil
	})

	// A chart version that does not render: Rendered=False with Helm's message on the release and its
	// binding; the clusters keep 2.0.0.
	patch = client.RawPatch(types.MergePatchType, []byte(`{"spec":{"version":"3.0.0"}}`))
	if err := env.Client.Patch(ctx, hr, patch); err != nil {
		t.Fatal(err)
	}
	broken := releaseStatus("Rendered=False on the release", func(r *appsv1alpha1.HelmRelease) error {
		c := meta.FindStatusCondition(r.Status.Conditions, appsv1alpha1.ConditionRendered)
		if c == nil || c.Status != metav1.ConditionFalse {
			return fmt.Errorf("conditions %+v", r.Status.Conditions)
		}
		return nil
	})
	c := meta.FindStatusCondition(broken.Status.Conditions, appsv1alpha1.ConditionRendered)
	if c.Reason != "RenderFailed" || !strings.Contains(c.Message, "broken.yaml") || !strings.Contains(c.Message, "nil pointer") {
		t.Errorf("Rendered %s: %s, want Helm's error naming broken.yaml", c.Reason, c.Message)
	}
	if err := env.Client.Get(ctx, bindingKey, b); err != nil {
		t.Fatal(err)
	}
	if bc := meta.FindStatusCondition(b.Status.Conditions, appsv1alpha1.ConditionRendered); bc == nil || bc.Status != metav1.ConditionFalse {
		t.Errorf("the binding's Rendered: %+v", bc)
	}
	for _, cluster := range []string{m1, m2} {
		if data, err := releaseSettings(ns, cluster); err != nil || data["chart"] != "2.0.0" {
			t.Errorf("%s runs %v (%v) after the broken upgrade, want 2.0.0", cluster, data, err)
		}
	}
}

// TestHelmReleaseFromOCIRegistry: a HelmRelease whose chart is in an OCI registry (served over HTTPS by the
// test) reaches a push member, rendered with its values.
func TestHelmReleaseFromOCIRegistry(t *testing.T) {
	ctx := context.Background()
	const ns = "helm-oci"
	reg := helmreleasetest.NewRegistry(t)
	reg.Add("settings", "1.0.0+oci", helmreleasetest.Package(t, settingsChart("1.0.0+oci", false)))
	// The hub of this process trusts what Go's system roots trust; SSL_CERT_FILE names them, read once, at
	// the first use (no earlier test of this package verifies a certificate against them: each client here
	// is given its CA).
	caFile := filepath.Join(t.TempDir(), "registry.pem")
	if err := os.WriteFile(caFile, reg.CertificatePEM, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSL_CERT_FILE", caFile)
	const member = "helm-oci-m1"
	pushCluster(t, member, map[string][]byte{"token": []byte(memberToken(t)), "caBundle": env.Config.CAData}, nil)
	t.Cleanup(func() {
		_ = env.Client.Delete(ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: member}})
	})
	createNamespace(t, ns)
	policy := tolerantPolicy(ns, "web", []string{member})
	policy.Spec.ResourceSelectors = []policyv1alpha1.ResourceSelector{{APIVersion: appsv1alpha1.GroupVersion.String(), Kind: "HelmRelease", Name: "web"}}
	create(t, policy)
	hr := &appsv1alpha1.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: appsv1alpha1.HelmReleaseSpec{
		Repo: reg.URL, Chart: "settings", Version: "1.0.0+oci",
		Values: &apiextensionsv1.JSON{Raw: []byte(`{"greeting":"ahoy","cluster":"oci"}`)}}}
	create(t, hr)
	testenv.Eventually(t, hangGuard, "the member running the chart from the OCI registry", func() error {
		data, err := releaseSettings(ns, "oci")
		if err != nil {
			got := &appsv1alpha1.HelmRelease{}
			_ = env.Client.Get(ctx, client.ObjectKeyFromObject(hr), got)
			return fmt.Errorf("%w (release status %+v)", err, got.Status.Conditions)
		}
		if data["chart"] != "1.0.0+oci" || data["greeting"] != "ahoy" || data["namespace"] != ns {
			return fmt.Errorf("data %v", data)
		}
		return nil
	})
}

// TestHelmReleaseAdmission: a release without exactly one chart source, or with a version or repository
// that cannot be one, is refused when written.
func TestHelmReleaseAdmission(t *testing.T) {
	ctx := context.Background()
	const ns = "helm-admission"
	createNamespace(t, ns)
	cm := &appsv1alpha1.ChartConfigMapReference{Name: "chart"}
	for _, tc := range []struct {
		name string
		spec appsv1alpha1.HelmReleaseSpec
		want string // empty: admitted
	}{
		{"repository", appsv1alpha1.HelmReleaseSpec{Repo: "https://charts.example.com", Chart: "web", Version: "1.2.3-rc.1+b7"}, ""},
		{"ConfigMap", appsv1alpha1.HelmReleaseSpec{ConfigMapRef: cm, TargetNamespace: ns}, ""},
		{"OCI registry", appsv1alpha1.HelmReleaseSpec{Repo: "oci://registry.example.com:5000/team-a/charts", Chart: "web_app", Version: "1.2.3+b7"}, ""},
		{"OCI registry without version", appsv1alpha1.HelmReleaseSpec{Repo: "oci://registry.example.com/charts", Chart: "web"}, "a repo source needs chart and version"},
		{"OCI repo with a tag", appsv1alpha1.HelmReleaseSpec{Repo: "oci://registry.example.com/charts:1.0.0", Chart: "web", Version: "1.0.0"}, "spec.repo"},
		{"OCI repo with a digest", appsv1alpha1.HelmReleaseSpec{Repo: "oci://registry.example.com/charts@sha256:0123", Chart: "web", Version: "1.0.0"}, "spec.repo"},
		{"OCI repo in capitals", appsv1alpha1.HelmReleaseSpec{Repo: "oci://registry.example.com/Charts", Chart: "web", Version: "1.0.0"}, "spec.repo"},
		{"OCI chart in capitals", appsv1alpha1.HelmReleaseSpec{Repo: "oci://registry.example.com/charts", Chart: "Web", Version: "1.0.0"}, "OCI repository name"},
		{"no source", appsv1alpha1.HelmReleaseSpec{Version: "1.0.0"}, "exactly one chart source"},
		{"two sources", appsv1alpha1.HelmReleaseSpec{Repo: "https://charts.example.com", Chart: "web", Version: "1.0.0", ConfigMapRef: cm}, "exactly one chart source"},
		{"repository without version", appsv1alpha1.HelmReleaseSpec{Repo: "https://charts.example.com", Chart: "web"}, "a repo source needs chart and version"},
		{"repository without chart", appsv1alpha1.HelmReleaseSpec{Repo: "https://charts.example.com", Version: "1.0.0"}, "a repo source needs chart and version"},
		{"version range", appsv1alpha1.HelmReleaseSpec{Repo: "https://charts.example.com", Chart: "web", Version: "^1.0"}, "spec.version"},
		{"two-part version", appsv1alpha1.HelmReleaseSpec{ConfigMapRef: cm, Version: "1.0"}, "spec.version"},
		{"not http", appsv1alpha1.HelmReleaseSpec{Repo: "ftp://charts.example.com", Chart: "web", Version: "1.0.0"}, "spec.repo"},
		{"chart beside a ConfigMap", appsv1alpha1.HelmReleaseSpec{ConfigMapRef: cm, Chart: "web"}, "configMapRef's chart is the one its archive holds"},
		{"bad target namespace", appsv1alpha1.HelmReleaseSpec{ConfigMapRef: cm, TargetNamespace: "Web_NS"}, "spec.targetNamespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hr := &appsv1alpha1.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "hr-"}, Spec: tc.spec}
			err := env.Client.Create(ctx, hr)
			if err == nil {
				t.Cleanup(func() { _ = env.Client.Delete(ctx, hr) })
			}
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want a refusal saying %q", err, tc.want)
			}
		})
	}
}
