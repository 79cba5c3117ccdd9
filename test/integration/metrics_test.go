package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	goruntime "runtime"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// scrape reads the hub's /metrics as its administrator.
func scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	raw, err := env.Kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	return families
}

// sample is the value of the series of family name with the given labels (a subset of its labels): a
// counter's or gauge's value, a histogram's count; found is false when no series matches.
func sample(families map[string]*dto.MetricFamily, name string, labels map[string]string) (value float64, found bool) {
	f, ok := families[name]
	if !ok {
		return 0, false
	}
	for _, m := range f.GetMetric() {
		matched := 0
		for _, l := range m.GetLabel() {
			if v, ok := labels[l.GetName()]; ok && v == l.GetValue() {
				matched++
			}
		}
		if matched != len(labels) {
			continue
		}
		switch {
		case m.Counter != nil:
			value += m.GetCounter().GetValue()
		case m.Gauge != nil:
			value += m.GetGauge().GetValue()
		case m.Histogram != nil:
			value += float64(m.GetHistogram().GetSampleCount())
		}
		found = true
	}
	return value, found
}

// controllerMetrics gathers the in-process hub's controller-runtime registry: Flotilla's controllers'
// reconcile counters, workers and workqueues under controller-runtime's own names (the hub serves them
// renamed to flotilla_*).
func controllerMetrics(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, f := range families {
		byName[f.GetName()] = f
	}
	return byName
}

// reconciles is how many reconciles the named controllers of the in-process hub have run, whatever their
// result.
func reconciles(t *testing.T, controllers ...string) float64 {
	t.Helper()
	families := controllerMetrics(t)
	var total float64
	for _, c := range controllers {
		n, _ := sample(families, "controller_runtime_reconcile_total", map[string]string{"controller": c})
		total += n
	}
	return total
}

// waitReconciled waits until controller has run at least n reconciles more than since (its count from
// reconciles, read before the change) and has nothing left to do: an empty queue and no reconcile running,
// at two checks in a row (an event may take a moment from the API server to the queue). A negative assertion
// made after it speaks of reconciles that happened rather than of time that passed, and a controller that
// never takes the change in fails it.
func waitReconciled(t *testing.T, controller string, since float64, n int) {
	t.Helper()
	idleBefore := false
	testenv.Eventually(t, hangGuard, fmt.Sprintf("%d reconciles of %s, then nothing left to do", n, controller), func() error {
		families := controllerMetrics(t)
		labels := map[string]string{"controller": controller}
		done, _ := sample(families, "controller_runtime_reconcile_total", labels)
		running, _ := sample(families, "controller_runtime_active_workers", labels)
		queued, _ := sample(families, "workqueue_depth", labels)
		idle := done >= since+float64(n) && running == 0 && queued == 0
		idle, idleBefore = idle && idleBefore, idle
		if !idle {
			return fmt.Errorf("%v reconciles since, %v running, %v queued", done-since, running, queued)
		}
		return nil
	})
}

// TestMetricsRefuseAnonymousScrapes: the hub's /metrics, Flotilla's included, needs a credential.
func TestMetricsRefuseAnonymousScrapes(t *testing.T) {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(env.Config.CAData)
	anonymous := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	resp, err := anonymous.Get(env.Config.Host + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		t.Fatalf("an anonymous scrape of /metrics got %s, want 401 or 403", resp.Status)
	}
}

// TestMetricsMoveWithPropagation: after a template propagates (placed, its Work applied and healthy as an
// agent reports), is evicted from a tainted cluster, and a Work fails to apply, the hub's /metrics show
// Flotilla's series and they moved: controller reconciles and work queues, bindings by condition, clusters
// by readiness, scheduling attempts, propagation latency, evictions, apply errors, the heartbeat's time; and
// flotilla_build_info names the Go version.
func TestMetricsMoveWithPropagation(t *testing.T) {
	ctx := context.Background()
	const ns = "metrics"
	before := scrape(t)
	createNamespace(t, ns)
	placeableCluster(t, "metrics-a", nil)
	placeableCluster(t, "metrics-b", nil)
	create(t, configMap(ns, "m", nil))
	create(t, tolerantPolicy(ns, "m", []string{"metrics-a", "metrics-b"}))
	waitPlaced(t, ns, "m", "metrics-a", "metrics-b")
	reportHealth(t, ns, "m", "metrics-a", workv1alpha1.ResourceHealthy, `{}`)
	testenv.Eventually(t, hangGuard, "metrics-a reported healthy in the binding", func() error {
		b, err := binding(ctx, configMapKind, ns, "m")
		if err != nil {
			return err
		}
		for _, item := range b.Status.AggregatedStatus {
			if item.ClusterName == "metrics-a" && item.Applied && item.Health == workv1alpha1.ResourceHealthy {
				return nil
			}
		}
		return fmt.Errorf("aggregated status %+v", b.Status.AggregatedStatus)
	})

	// A NoExecute taint moves the binding away from metrics-a: an eviction.
	cluster := &clusterv1alpha1.Cluster{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "metrics-a"}, cluster); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(cluster.DeepCopy())
	cluster.Spec.Taints = append(cluster.Spec.Taints, corev1.Taint{Key: "maintenance", Effect: corev1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: time.Now()}})
	if err := env.Client.Patch(ctx, cluster, patch); err != nil {
		t.Fatal(err)
	}
	waitPlaced(t, ns, "m", "metrics-b")

	// A Work whose kind the member does not serve fails to apply: the hub itself is the Push member.
	pushCluster(t, "metrics-push", map[string][]byte{"token": []byte(memberToken(t)), "caBundle": env.Config.CAData}, nil)
	raw, err := json.Marshal(map[string]any{"apiVersion": "example.io/v1", "kind": "Unserved", "metadata": map[string]any{"name": "x", "namespace": "default"}})
	if err != nil {
		t.Fatal(err)
	}
	create(t, &workv1alpha1.Work{
		ObjectMeta: metav1.ObjectMeta{Name: "unserved", Namespace: clusterv1alpha1.ClusterNamespace("metrics-push"),
			Labels: ownedWorkLabels(t, clusterv1alpha1.ClusterNamespace("metrics-push"), "unserved", nil)},
		Spec: workv1alpha1.WorkSpec{Workload: workv1alpha1.WorkloadTemplate{Manifests: []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}}},
	})

	moved := []struct {
		name   string
		labels map[string]string
	}{
		{"flotilla_controller_reconcile_total", nil},
		{"flotilla_workqueue_adds_total", nil},
		{"flotilla_bindings", map[string]string{"kind": "ResourceBinding", "condition": "Scheduled", "status": "True"}},
		{"flotilla_scheduler_attempts_total", map[string]string{"result": "scheduled"}},
		{"flotilla_scheduler_attempt_duration_seconds", map[string]string{"result": "scheduled"}},
		{"flotilla_clusters", map[string]string{"ready": "Unknown"}},
		{"flotilla_propagation_duration_seconds", map[string]string{"stage": "applied"}},
		{"flotilla_propagation_duration_seconds", map[string]string{"stage": "healthy"}},
		{"flotilla_evictions_total", map[string]string{"reason": "TaintUntolerated"}},
		{"flotilla_work_apply_errors_total", map[string]string{"cluster": "metrics-push"}},
	}
	testenv.Eventually(t, hangGuard, "Flotilla's series moved", func() error {
		after := scrape(t)
		for _, m := range moved {
			was, _ := sample(before, m.name, m.labels)
			now, found := sample(after, m.name, m.labels)
			if !found {
				return fmt.Errorf("no series %s%v", m.name, m.labels)
			}
			if now == was {
				return fmt.Errorf("%s%v stayed at %v", m.name, m.labels, now)
			}
		}
		// A time, not an age: within the last minute, as seconds since the epoch.
		seen, found := sample(after, "flotilla_cluster_heartbeat_timestamp_seconds", map[string]string{"cluster": "metrics-push"})
		if now := float64(time.Now().Unix()); !found || seen < now-60 || seen > now+1 {
			return fmt.Errorf("heartbeat time of metrics-push %v (found %v), want within the last minute of %v", seen, found, now)
		}
		if _, found := sample(after, "flotilla_build_info", map[string]string{"goversion": goruntime.Version()}); !found {
			return fmt.Errorf("no flotilla_build_info with goversion %s", goruntime.Version())
		}
		return nil
	})
}
