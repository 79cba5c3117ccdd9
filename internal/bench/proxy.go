package bench

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	proxyv1alpha1 "github.com/flotilla-io/flotilla/api/proxy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/bench/measure"
	"github.com/flotilla-io/flotilla/internal/devenv"
)

// ProxyOptions configure `flotilla bench proxy`.
type ProxyOptions struct {
	// Requests is how many GETs are timed each way.
	Requests int
	// Out, if set, receives the results as JSON.
	Out string
}

// ProxyResult holds GET latencies in seconds, straight to a member and through the hub's proxy.
type ProxyResult struct {
	Requests int                `json:"requests"`
	Direct   map[string]float64 `json:"direct"`
	Proxied  map[string]float64 `json:"proxied"`
}

// proxyWarmup requests go before the timed ones each way: connections, TLS sessions and the authorization
// caches of the hub and its proxy are set up by then, as they are for a client that keeps working.
const proxyWarmup = 10

// RunProxy starts a hub and one push member and times, one after another, GETs of one ConfigMap in the
// member: with the member's admin credentials straight to it, and with the hub's admin credentials through
// the hub's proxy (the hub's authentication and authorization, the aggregator, the proxy, impersonation on
// the member).
func RunProxy(ctx context.Context, o ProxyOptions, out io.Writer, progress func(string)) error {
	if o.Requests < 1 {
		return fmt.Errorf("--requests %d: must be at least 1", o.Requests)
	}
	fleet, err := startMemberFleet(ctx, "proxy", devenv.UpOptions{Members: 1, Mode: devenv.ModePush}, progress)
	if err != nil {
		return err
	}
	defer fleet.stop()

	name := devenv.MemberName(1)
	proxied := rest.CopyConfig(fleet.config)
	proxied.Host = strings.TrimSuffix(fleet.config.Host, "/") + proxyv1alpha1.ClusterProxyPath(name)
	direct := fleet.members[name]
	through, err := kubernetes.NewForConfig(proxied)
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bench-proxy", Namespace: "default"}, Data: map[string]string{"k": "v"}}
	if _, err := direct.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return err
	}
	result := ProxyResult{Requests: o.Requests}
	for _, way := range []struct {
		name   string
		client kubernetes.Interface
		into   *map[string]float64
	}{{"direct", direct, &result.Direct}, {"through the hub", through, &result.Proxied}} {
		progress(fmt.Sprintf("%d GETs %s", o.Requests, way.name))
		latencies := make([]time.Duration, 0, o.Requests)
		for i := range proxyWarmup + o.Requests {
			start := time.Now()
			if _, err := way.client.CoreV1().ConfigMaps("default").Get(ctx, cm.Name, metav1.GetOptions{}); err != nil {
				return fmt.Errorf("GET %s: %w", way.name, err)
			}
			if i >= proxyWarmup {
				latencies = append(latencies, time.Since(start))
			}
		}
		*way.into = measure.Percentiles(latencies)
	}
	fmt.Fprintf(out, "GET of one ConfigMap in a push member, %d requests one after another (ms)\n", o.Requests)
	fmt.Fprintf(out, "%-16s %8s %8s %8s %8s\n", "", "p50", "p90", "p99", "max")
	for _, row := range []struct {
		name string
		p    map[string]float64
	}{{"direct", result.Direct}, {"through the hub", result.Proxied}} {
		fmt.Fprintf(out, "%-16s %8.2f %8.2f %8.2f %8.2f\n", row.name, row.p["p50"]*1000, row.p["p90"]*1000, row.p["p99"]*1000, row.p["max"]*1000)
	}
	return writeJSON(o.Out, result)
}
