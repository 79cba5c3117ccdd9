package install

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/charts"
	"github.com/flotilla-io/flotilla/internal/helmchart"
	"github.com/flotilla-io/flotilla/internal/scheme"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

var agentValues = map[string]any{
	"hub":            map[string]any{"url": "https://hub.example.com:6443", "caCertHashes": []any{"sha256:" + strings.Repeat("ab", 32)}},
	"clusterName":    "m1",
	"bootstrapToken": map[string]any{"value": "abcdef.0123456789abcdef"},
}

// TestChartsLint: both charts pass helm lint (warnings count as failures), the agent chart with the values
// it requires; without them it says which is missing.
func TestChartsLint(t *testing.T) {
	for _, tc := range []struct {
		chart  string
		values map[string]any
	}{{charts.Hub, nil}, {charts.Agent, agentValues}} {
		result := lint.RunAll("../../../charts/"+tc.chart, tc.values, "flotilla-system")
		for _, m := range result.Messages {
			if m.Severity >= support.WarningSev {
				t.Errorf("helm lint %s: %s", tc.chart, m)
			}
		}
	}
	c, err := helmchart.Load(charts.Agent)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := helmchart.Render(c, "a", "flotilla-system", nil); err == nil || !strings.Contains(err.Error(), " is required") {
		t.Errorf("the agent chart renders without its required values: %v", err)
	}
}

// TestHubChartAppliesToMember renders the hub chart with external etcd, extra SANs and the Grafana dashboard,
// and applies it with server-side dry-run to a real member API server: every object is valid there. The serving certificate
// covers the Service's DNS names.
func TestHubChartAppliesToMember(t *testing.T) {
	ctx := context.Background()
	m := startMember(t, "chart-host")
	c, err := helmchart.Load(charts.Hub)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := helmchart.Render(c, "hub", "flotilla", map[string]any{
		"extraTLSSANs": []any{"hub.example.com"},
		"etcd":         map[string]any{"servers": []any{"https://etcd-0:2379", "https://etcd-1:2379"}, "tlsSecret": "etcd-client"},
		// The PrometheusRule needs the Prometheus Operator's CRD, which this member has not.
		"monitoring": map[string]any{"grafanaDashboard": map[string]any{"enabled": true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	member, err := client.New(m.config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := member.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "flotilla"}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, obj := range objs {
		kinds[obj.GetKind()] = true
		if err := member.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("test"), client.DryRunAll); err != nil {
			t.Errorf("%s %s does not apply to a real API server: %v", obj.GetKind(), obj.GetName(), err)
		}
		if obj.GetKind() != "StatefulSet" {
			continue
		}
		args := strings.Join(nestedStrings(t, obj.Object, "hub"), " ")
		for _, want := range []string{"--tls-san=hub.flotilla.svc", "--tls-san=hub.flotilla.svc.cluster.local", "--tls-san=hub.example.com",
			"--etcd-servers=https://etcd-0:2379,https://etcd-1:2379", "--etcd-cafile=/etc/flotilla/etcd/ca.crt"} {
			if !strings.Contains(args, want) {
				t.Errorf("the hub's arguments lack %s: %s", want, args)
			}
		}
	}
	for _, kind := range []string{"StatefulSet", "Service", "ConfigMap"} {
		if !kinds[kind] {
			t.Errorf("the hub chart renders no %s: %v", kind, kinds)
		}
	}
}

// TestAgentChartAppliesToMember renders the agent chart with every pod value set and applies it with
// server-side dry-run to a real member API server: the probes, ports, priority class, pull secrets,
// annotations and labels are valid there.
func TestAgentChartAppliesToMember(t *testing.T) {
	ctx := context.Background()
	m := startMember(t, "agent-chart-host")
	c, err := helmchart.Load(charts.Agent)
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]any{
		"metrics":           map[string]any{"enabled": true},
		"extraArgs":         []any{"--log-format=json"},
		"priorityClassName": "system-cluster-critical",
		"imagePullSecrets":  []any{map[string]any{"name": "registry-credentials"}},
		"podAnnotations":    map[string]any{"prometheus.io/scrape": "true"},
		"podLabels":         map[string]any{"team": "platform"},
	}
	maps.Copy(values, agentValues)
	objs, err := helmchart.Render(c, "flotilla-agent", "flotilla-system", values)
	if err != nil {
		t.Fatal(err)
	}
	member, err := client.New(m.config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := member.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "flotilla-system"}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, obj := range objs {
		if err := member.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("test"), client.DryRunAll); err != nil {
			t.Errorf("%s %s does not apply to a real API server: %v", obj.GetKind(), obj.GetName(), err)
		}
		if obj.GetKind() == "Deployment" {
			args := strings.Join(nestedStrings(t, obj.Object, "agent"), " ")
			for _, want := range []string{"--health-probe-bind-address=:8081", "--metrics-bind-address=:8080", "--log-format=json"} {
				if !strings.Contains(args, want) {
					t.Errorf("the agent's arguments lack %s: %s", want, args)
				}
			}
		}
	}
}

// nestedStrings returns the args of container name in a workload's pod template.
func nestedStrings(t *testing.T, obj map[string]any, name string) []string {
	t.Helper()
	spec, _ := obj["spec"].(map[string]any)
	template, _ := spec["template"].(map[string]any)
	podSpec, _ := template["spec"].(map[string]any)
	containers, _ := podSpec["containers"].([]any)
	for _, c := range containers {
		container, _ := c.(map[string]any)
		if container["name"] != name {
			continue
		}
		var args []string
		for _, a := range container["args"].([]any) {
			args = append(args, a.(string))
		}
		return args
	}
	t.Fatalf("no container %s", name)
	return nil
}

// TestHubRegistersHost: `flotilla hub --kubeconfig HOST --allow-workloads --register-host NAME` registers the
// cluster it runs on as a Push member, which becomes Ready; a dev member plays the host.
func TestHubRegistersHost(t *testing.T) {
	m := startMember(t, "host")
	p := testenv.StartProcess(t, "hub-on-host", "hub", "--kubeconfig", m.kubeconfig, "--allow-workloads", "--register-host", "host", "--allow-local-member-endpoints")
	waitOutput(t, p, 2*time.Minute, "the host cluster is registered as host (push mode")
	hubClient, err := client.New(m.config, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "the host cluster is Ready", func() error {
		cluster := &clusterv1alpha1.Cluster{}
		if err := hubClient.Get(context.Background(), client.ObjectKey{Name: "host"}, cluster); err != nil {
			return err
		}
		if cluster.Spec.SyncMode != clusterv1alpha1.Push || !meta.IsStatusConditionTrue(cluster.Status.Conditions, clusterv1alpha1.ClusterConditionReady) {
			return fmt.Errorf("mode %s, conditions %v", cluster.Spec.SyncMode, cluster.Status.Conditions)
		}
		return nil
	})
}
