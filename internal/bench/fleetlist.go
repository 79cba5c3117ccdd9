package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	proxyv1alpha1 "github.com/flotilla-io/flotilla/api/proxy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/bench/measure"
	"github.com/flotilla-io/flotilla/internal/devenv"
	"github.com/flotilla-io/flotilla/internal/registration"
)

// FleetListOptions configure `flotilla bench fleet-list`.
type FleetListOptions struct {
	// Clusters are the fleet sizes to time, each a number of clusters read by one list.
	Clusters []int
	// Objects is how many ConfigMaps the member holds, all of which each cluster's read returns.
	Objects int
	// Requests is how many lists are timed per size.
	Requests int
	// Out, if set, receives the results as JSON.
	Out string
}

// Validate refuses options that cannot run, naming the flag.
func (o FleetListOptions) Validate() error {
	if len(o.Clusters) == 0 || slices.ContainsFunc(o.Clusters, func(n int) bool { return n < 1 || n > 100 }) {
		return fmt.Errorf("--clusters %v: want sizes from 1 to 100", o.Clusters)
	}
	if o.Objects < 1 {
		return fmt.Errorf("--objects %d: must be at least 1", o.Objects)
	}
	if o.Requests < 1 {
		return fmt.Errorf("--requests %d: must be at least 1", o.Requests)
	}
	return nil
}

// FleetListResult holds, per fleet size, the latencies in seconds of a fleet list through the hub.
type FleetListResult struct {
	Objects  int                           `json:"objects"`
	Requests int                           `json:"requests"`
	Clusters map[string]map[string]float64 `json:"clusters"`
}

// RunFleetList starts a hub and one push member, registers that member again under more names (push
// clusters with the same credentials) up to the largest size, and times fleet lists of the member's
// ConfigMaps over the first N clusters, one list after another. What grows with N is the hub's work (one
// authorization, one impersonated GET and one decode per cluster, in parallel) and the member's, which
// answers all N reads: N real members would each answer one.
func RunFleetList(ctx context.Context, o FleetListOptions, out io.Writer, progress func(string)) error {
	if err := o.Validate(); err != nil {
		return err
	}
	fleet, err := startMemberFleet(ctx, "fleet-list", devenv.UpOptions{Members: 1, Mode: devenv.ModePush}, progress)
	if err != nil {
		return err
	}
	defer fleet.stop()

	member := devenv.MemberName(1)
	names, err := registerAgain(ctx, fleet, member, slices.Max(o.Clusters))
	if err != nil {
		return err
	}
	direct := fleet.members[member]
	for i := range o.Objects {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-fleet-list-%d", i), Namespace: "default",
			Labels: map[string]string{"bench": "fleet-list"}}, Data: map[string]string{"k": "v"}}
		if _, err := direct.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	hub := fleet.kube

	result := FleetListResult{Objects: o.Objects, Requests: o.Requests, Clusters: map[string]map[string]float64{}}
	for _, n := range o.Clusters {
		list := func() error { return fleetListOnce(ctx, hub.Discovery().RESTClient(), names[:n], n*o.Objects) }
		// Until every cluster answers (the proxy's cache learns the new Clusters), then warm up.
		progress(fmt.Sprintf("waiting for a list over %d clusters to answer in full", n))
		deadline := time.Now().Add(time.Minute)
		for err := list(); err != nil; err = list() {
			if time.Now().After(deadline) {
				return err
			}
			time.Sleep(time.Second)
		}
		progress(fmt.Sprintf("%d fleet lists over %d clusters", o.Requests, n))
		latencies := make([]time.Duration, 0, o.Requests)
		for i := range proxyWarmup + o.Requests {
			start := time.Now()
			if err := list(); err != nil {
				return err
			}
			if i >= proxyWarmup {
				latencies = append(latencies, time.Since(start))
			}
		}
		result.Clusters[strconv.Itoa(n)] = measure.Percentiles(latencies)
	}
	fmt.Fprintf(out, "Fleet list of %d ConfigMaps per cluster through the hub, one push member registered as each cluster, %d lists one after another (ms)\n", o.Objects, o.Requests)
	fmt.Fprintf(out, "%-9s %8s %8s %8s %8s\n", "clusters", "p50", "p90", "p99", "max")
	for _, n := range o.Clusters {
		p := result.Clusters[strconv.Itoa(n)]
		fmt.Fprintf(out, "%-9d %8.2f %8.2f %8.2f %8.2f\n", n, p["p50"]*1000, p["p90"]*1000, p["p99"]*1000, p["max"]*1000)
	}
	return writeJSON(o.Out, result)
}

// registerAgain joins member under n-1 more names as push clusters with the credentials it was joined with,
// and returns the n names, member first.
func registerAgain(ctx context.Context, fleet *memberFleet, member string, n int) ([]string, error) {
	kubeconfig, err := clientcmd.LoadFromFile(fleet.env.MemberKubeconfigs[member])
	if err != nil {
		return nil, err
	}
	names := []string{member}
	for i := 2; i <= n; i++ {
		name := fmt.Sprintf("%s-as-%d", member, i)
		// The names carry no cluster ID: they all lead to one member, and the hub confirms an ID it is given
		// against the member's kube-system UID before it sends anything there.
		if _, err := registration.JoinPush(ctx, fleet.admin, registration.PushRequest{ClusterName: name, Kubeconfig: kubeconfig}); err != nil {
			return nil, fmt.Errorf("registering %s again as %s: %w", member, name, err)
		}
		names = append(names, name)
	}
	return names, nil
}

// fleetListOnce lists the benchmark's ConfigMaps over clusters through the hub and checks that every cluster
// answered with all of them.
func fleetListOnce(ctx context.Context, hub rest.Interface, clusters []string, want int) error {
	raw, err := hub.Get().AbsPath(proxyv1alpha1.FleetListPath("/api/v1/namespaces/default/configmaps")).
		Param("clusters", strings.Join(clusters, ",")).Param("labelSelector", "bench=fleet-list").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("fleet list: %w", err)
	}
	list := &proxyv1alpha1.FleetList{}
	if err := json.Unmarshal(raw, list); err != nil {
		return err
	}
	for _, c := range list.Clusters {
		if c.Error != nil {
			return fmt.Errorf("fleet list: cluster %s: %s", c.Name, c.Error.Message)
		}
	}
	if len(list.Items) != want {
		return fmt.Errorf("fleet list: %d items, want %d", len(list.Items), want)
	}
	return nil
}
