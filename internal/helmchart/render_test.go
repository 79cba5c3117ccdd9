package helmchart

import (
	"encoding/json"
	"io/fs"
	"maps"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/component-helpers/auth/rbac/validation"

	"github.com/flotilla-io/flotilla/charts"
	"github.com/flotilla-io/flotilla/internal/install"
	"github.com/flotilla-io/flotilla/internal/registration"
)

// TestHubNotes: the hub chart's notes show commands that work in its image, which has nothing but flotilla:
// flotilla hub kubeconfig with the Service's name, never cat or tar.
func TestHubNotes(t *testing.T) {
	c, err := Load(charts.Hub)
	if err != nil {
		t.Fatal(err)
	}
	notes, err := Notes(c, "hub", "flotilla", map[string]any{"service": map[string]any{"port": 7443}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"kubectl -n flotilla exec hub-0 -- flotilla hub kubeconfig --data-dir /var/lib/flotilla \\\n    --server https://hub.flotilla.svc:7443 > hub.kubeconfig",
		"--server https://localhost:7443",
		"flotilla token create --kubeconfig hub.kubeconfig --cluster-name NAME --server https://hub.flotilla.svc:7443",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("the hub chart's notes lack %q:\n%s", want, notes)
		}
	}
	for _, tool := range []string{" cat ", " tar ", "kubectl cp"} {
		if strings.Contains(notes, tool) {
			t.Errorf("the hub chart's notes use %q, which its image does not have:\n%s", tool, notes)
		}
	}
}

// agentValues are the values the agent chart requires.
func agentValues(extra map[string]any) map[string]any {
	v := map[string]any{
		"hub":            map[string]any{"url": "https://hub.example.com:6443", "caCertHashes": []any{"sha256:" + strings.Repeat("ab", 32)}},
		"clusterName":    "m1",
		"bootstrapToken": map[string]any{"value": "abcdef.0123456789abcdef"},
	}
	maps.Copy(v, extra)
	return v
}

// renderAgent renders the agent chart with values and returns its Deployment and ClusterRole.
func renderAgent(t *testing.T, values map[string]any) (*appsv1.Deployment, *rbacv1.ClusterRole) {
	t.Helper()
	c, err := Load(charts.Agent)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Render(c, "flotilla-agent", "flotilla-system", values)
	if err != nil {
		t.Fatal(err)
	}
	deploy, role := &appsv1.Deployment{}, &rbacv1.ClusterRole{}
	for _, obj := range objs {
		var into any
		switch obj.GetKind() {
		case "Deployment":
			into = deploy
		case "ClusterRole":
			into = role
		default:
			continue
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj.Object, into, true); err != nil {
			t.Fatalf("%s: %v", obj.GetKind(), err)
		}
	}
	if deploy.Name == "" || role.Name == "" {
		t.Fatal("the agent chart renders no Deployment or no ClusterRole")
	}
	return deploy, role
}

// TestAgentChartPodValues: the agent chart's pod values reach the pod: probes on /healthz and /readyz on the
// port the agent serves them at (on by default), metrics when asked, extra arguments, priority class, pull
// secrets, annotations and labels (the chart's own labels kept).
func TestAgentChartPodValues(t *testing.T) {
	deploy, _ := renderAgent(t, agentValues(nil))
	pod := deploy.Spec.Template.Spec
	agent := pod.Containers[0]
	if !slices.Contains(agent.Args, "--health-probe-bind-address=:8081") || slices.ContainsFunc(agent.Args, func(a string) bool { return strings.HasPrefix(a, "--metrics-bind-address") }) {
		t.Errorf("default arguments %v: want probes on :8081 and no metrics", agent.Args)
	}
	if agent.LivenessProbe == nil || agent.LivenessProbe.HTTPGet.Path != "/healthz" || agent.LivenessProbe.HTTPGet.Port.String() != "health" ||
		agent.ReadinessProbe == nil || agent.ReadinessProbe.HTTPGet.Path != "/readyz" || len(agent.Ports) != 1 || agent.Ports[0].ContainerPort != 8081 {
		t.Errorf("default probes: liveness %+v, readiness %+v, ports %+v", agent.LivenessProbe, agent.ReadinessProbe, agent.Ports)
	}
	if pod.PriorityClassName != "" || len(pod.ImagePullSecrets) != 0 || len(deploy.Spec.Template.Annotations) != 0 {
		t.Errorf("defaults set a priority class %q, pull secrets %v or annotations %v", pod.PriorityClassName, pod.ImagePullSecrets, deploy.Spec.Template.Annotations)
	}

	deploy, _ = renderAgent(t, agentValues(map[string]any{
		"healthProbe":       map[string]any{"port": 9440},
		"metrics":           map[string]any{"enabled": true, "port": 9090},
		"extraArgs":         []any{"--log-format=json", "--v=2"},
		"priorityClassName": "system-cluster-critical",
		"imagePullSecrets":  []any{map[string]any{"name": "registry-credentials"}},
		"podAnnotations":    map[string]any{"prometheus.io/scrape": "true"},
		"podLabels":         map[string]any{"team": "platform"},
	}))
	pod = deploy.Spec.Template.Spec
	agent = pod.Containers[0]
	for _, want := range []string{"--health-probe-bind-address=:9440", "--metrics-bind-address=:9090", "--log-format=json", "--v=2"} {
		if !slices.Contains(agent.Args, want) {
			t.Errorf("arguments %v lack %s", agent.Args, want)
		}
	}
	if len(agent.Ports) != 2 || agent.Ports[0].ContainerPort != 9440 || agent.Ports[1].ContainerPort != 9090 {
		t.Errorf("ports %+v", agent.Ports)
	}
	if pod.PriorityClassName != "system-cluster-critical" || len(pod.ImagePullSecrets) != 1 || pod.ImagePullSecrets[0].Name != "registry-credentials" {
		t.Errorf("priority class %q, pull secrets %v", pod.PriorityClassName, pod.ImagePullSecrets)
	}
	labels := deploy.Spec.Template.Labels
	if deploy.Spec.Template.Annotations["prometheus.io/scrape"] != "true" || labels["team"] != "platform" || labels["app.kubernetes.io/instance"] != "flotilla-agent" {
		t.Errorf("pod annotations %v, labels %v", deploy.Spec.Template.Annotations, labels)
	}

	deploy, _ = renderAgent(t, agentValues(map[string]any{"healthProbe": map[string]any{"enabled": false}}))
	if agent := deploy.Spec.Template.Spec.Containers[0]; agent.LivenessProbe != nil || len(agent.Ports) != 0 ||
		slices.ContainsFunc(agent.Args, func(a string) bool { return strings.HasPrefix(a, "--health-probe-bind-address") }) {
		t.Errorf("healthProbe.enabled=false still probes: %+v %v", agent.LivenessProbe, agent.Args)
	}
}

// TestAgentChartImpersonation: the agent's ClusterRole grants exactly what the hub's proxy needs in the member
// (registration.ProxyImpersonation, the one definition a push join and the agent check against) unless
// rbac.impersonate is off; the same chart is what join --install applies.
func TestAgentChartImpersonation(t *testing.T) {
	var needed []rbacv1.PolicyRule
	for _, attrs := range registration.ProxyImpersonation {
		needed = append(needed, rbacv1.PolicyRule{APIGroups: []string{attrs.Group}, Resources: []string{attrs.Resource}, Verbs: []string{attrs.Verb}})
	}
	for _, tt := range []struct {
		name   string
		values map[string]any
		want   bool
	}{
		{name: "default", values: agentValues(nil), want: true},
		{name: "join --install", values: install.AgentValues{HubURL: "https://hub:6443", CACertHashes: []string{"sha256:0"}, ClusterName: "m1", Token: "t", CertTTL: time.Hour}.Values(), want: true},
		{name: "narrow preset", values: agentValues(map[string]any{"rbac": map[string]any{"preset": "workloads"}}), want: true},
		{name: "off", values: agentValues(map[string]any{"rbac": map[string]any{"impersonate": false}}), want: false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, role := renderAgent(t, tt.values)
			if covers, missing := validation.Covers(role.Rules, needed); covers != tt.want {
				t.Fatalf("the ClusterRole covers the proxy's impersonation: %v, want %v (missing %v)", covers, tt.want, missing)
			}
		})
	}
}

// TestAgentNotes: the agent chart's notes say how to follow the join and whether the proxy reaches the cluster.
func TestAgentNotes(t *testing.T) {
	c, err := Load(charts.Agent)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		values map[string]any
		want   []string
	}{
		{agentValues(nil), []string{"kubectl -n flotilla-system logs deploy/flotilla-agent -f", "rollout status deploy/flotilla-agent",
			"flotilla get clusters m1", "flotilla kubectl m1 -- get pods -A"}},
		{agentValues(map[string]any{"rbac": map[string]any{"impersonate": false}}), []string{"rbac.impersonate is off", "get 403"}},
	} {
		notes, err := Notes(c, "flotilla-agent", "flotilla-system", tt.values)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range tt.want {
			if !strings.Contains(notes, want) {
				t.Errorf("the agent chart's notes lack %q:\n%s", want, notes)
			}
		}
	}
}

// TestHubChartMonitoring: the hub chart renders the Grafana dashboard (a ConfigMap labelled for Grafana's
// sidecar) and the PrometheusRule of the alerts only when asked, each with its extra labels.
func TestHubChartMonitoring(t *testing.T) {
	c, err := Load(charts.Hub)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Render(c, "hub", "flotilla", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range objs {
		if obj.GetKind() == "PrometheusRule" || obj.GetLabels()["grafana_dashboard"] != "" {
			t.Errorf("the hub chart renders %s %s by default", obj.GetKind(), obj.GetName())
		}
	}

	objs, err = Render(c, "hub", "flotilla", map[string]any{"monitoring": map[string]any{
		"grafanaDashboard": map[string]any{"enabled": true, "namespace": "grafana", "labels": map[string]any{"team": "platform"}},
		"prometheusRule":   map[string]any{"enabled": true, "labels": map[string]any{"release": "prometheus"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var dashboard *corev1.ConfigMap
	var rule *unstructured.Unstructured
	for _, obj := range objs {
		switch {
		case obj.GetKind() == "ConfigMap" && obj.GetLabels()["grafana_dashboard"] == "1":
			dashboard = &corev1.ConfigMap{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, dashboard); err != nil {
				t.Fatal(err)
			}
		case obj.GetKind() == "PrometheusRule":
			rule = obj
		}
	}
	if dashboard == nil || rule == nil {
		t.Fatalf("with both enabled the hub chart renders dashboard %v, rule %v", dashboard != nil, rule != nil)
	}
	if dashboard.Namespace != "grafana" || dashboard.Labels["team"] != "platform" {
		t.Errorf("dashboard ConfigMap in %q with labels %v, want namespace grafana and label team", dashboard.Namespace, dashboard.Labels)
	}
	var board struct {
		UID    string `json:"uid"`
		Panels []struct {
			Targets []struct{ Expr string } `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal([]byte(dashboard.Data["flotilla-dashboard.json"]), &board); err != nil || board.UID != "flotilla" || len(board.Panels) == 0 {
		t.Fatalf("the ConfigMap's dashboard: uid %q, %d panels, %v", board.UID, len(board.Panels), err)
	}
	if rule.GetNamespace() != "flotilla" || rule.GetLabels()["release"] != "prometheus" {
		t.Errorf("PrometheusRule in %q with labels %v, want namespace flotilla and label release", rule.GetNamespace(), rule.GetLabels())
	}
	groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
	var alerts []string
	for _, g := range groups {
		rules, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
		for _, r := range rules {
			alert, _, _ := unstructured.NestedString(r.(map[string]any), "alert")
			alerts = append(alerts, alert)
		}
	}
	for _, want := range []string{"FlotillaClusterUnreachable", "FlotillaClusterHeartbeatLate", "FlotillaSchedulingErrors", "FlotillaQueueBacklog"} {
		if !slices.Contains(alerts, want) {
			t.Errorf("the PrometheusRule has no alert %s: %v", want, alerts)
		}
	}
}

// TestChartsRefuseValuesOfTheWrongType: values.schema.json makes Helm refuse a value of the wrong type, and a
// misspelt key, before anything renders.
func TestChartsRefuseValuesOfTheWrongType(t *testing.T) {
	for _, tt := range []struct {
		chart  string
		values map[string]any
		want   string
	}{
		{charts.Hub, map[string]any{"service": map[string]any{"port": "https"}}, "port"},
		{charts.Hub, map[string]any{"monitoring": map[string]any{"grafanaDashboard": map[string]any{"enabled": "yes"}}}, "enabled"},
		{charts.Hub, map[string]any{"monitoring": map[string]any{"grafanaDashbord": map[string]any{"enabled": true}}}, "grafanaDashbord"},
		{charts.Agent, agentValues(map[string]any{"rbac": map[string]any{"impersonate": "false"}}), "impersonate"},
		{charts.Agent, agentValues(map[string]any{"extraArgs": "--v=2"}), "extraArgs"},
	} {
		c, err := Load(tt.chart)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Render(c, "r", "flotilla", tt.values)
		if err == nil || !strings.Contains(err.Error(), "schema") || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("chart %s with %v: error = %v, want the schema to refuse %s", tt.chart, tt.values, err, tt.want)
		}
	}
}

// TestMonitoringUsesDocumentedSeries: every flotilla_* series the dashboard and the alerts query is one
// docs/operations.md lists, so a renamed metric cannot leave them querying nothing.
func TestMonitoringUsesDocumentedSeries(t *testing.T) {
	docs, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	series := regexp.MustCompile(`flotilla_[a-z_]+`)
	for _, file := range []string{"files/flotilla-dashboard.json", "files/alerts.yaml"} {
		raw, err := fs.ReadFile(charts.FS, path.Join(charts.Hub, file))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range series.FindAllString(string(raw), -1) {
			for _, suffix := range []string{"_bucket", "_count", "_sum"} {
				name = strings.TrimSuffix(name, suffix)
			}
			if !strings.Contains(string(docs), "`"+name+"`") {
				t.Errorf("%s queries %s, which docs/operations.md does not list", file, name)
			}
		}
	}
}
