package bench

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-io/flotilla/api/addon/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/bench/measure"
)

// AddOnOptions configure `flotilla bench addon`.
type AddOnOptions struct {
	// Clusters is the number of hollow agents, each enabled with the add-on by its placement.
	Clusters int
	// Rest is how long the hub is watched at rest once the add-on is Available everywhere.
	Rest time.Duration
	// Timeout bounds the wait for the add-on to be Available on every cluster.
	Timeout time.Duration
	// Out, if set, receives the results as JSON.
	Out string
}

// Validate checks the options before anything starts.
func (o *AddOnOptions) Validate() error {
	switch {
	case o.Clusters < 1:
		return fmt.Errorf("--clusters %d: must be at least 1", o.Clusters)
	case o.Rest < 10*time.Second:
		return fmt.Errorf("--rest %s: must be at least 10s", o.Rest)
	case o.Timeout <= 0:
		return fmt.Errorf("--timeout %s: must be positive", o.Timeout)
	}
	return nil
}

// AddOnResult is what `flotilla bench addon` measured.
type AddOnResult struct {
	Clusters int `json:"clusters"`
	// EnableSeconds is from the AddOn's creation to its ClusterAddOn being Available on every cluster.
	EnableSeconds float64 `json:"enableSeconds"`
	// AtRest is the fleet with the add-on Available everywhere and nothing changing: the hub API's writes
	// per cluster and minute, Leases apart, as bench propagation counts them (no CPU figures).
	AtRest RestResult `json:"atRest"`
	// AddOnWrites are the writes of AtRest that are the add-on's: its kinds, its Works and its RBAC, per
	// cluster and minute (the goal: at most 1).
	AddOnWrites float64 `json:"addOnWritesPerClusterPerMinute"`
}

// addOnResources are the resources the add-on framework writes for an add-on (with their status). (The
// benchmark's add-on has health mode Work: Leases at rest are the agents' heartbeats.)
var addOnResources = []string{"addons", "addons/status", "clusteraddons", "clusteraddons/status", "works", "works/status",
	"roles", "rolebindings"}

// benchAddOn is the add-on the benchmark enables: a ConfigMap and a Deployment per cluster, by placement.
const benchAddOn = "bench"

// RunAddOn starts a hub as a child process and Clusters hollow agents (as bench scale does; they report
// their Works applied and healthy), enables one add-on on every cluster by a Placement, waits until it is
// Available everywhere, and counts the hub's writes at rest.
func RunAddOn(ctx context.Context, o AddOnOptions, out io.Writer, progress func(string)) error {
	if err := o.Validate(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fleet, err := startHollowFleet(ctx, "addon", o.Clusters, progress)
	if err != nil {
		return err
	}
	defer fleet.stop()
	admin := fleet.admin

	const ns = "bench-addon"
	// The Placement picks every cluster of the global ClusterSet, bound to its namespace.
	binding := &clusterv1alpha1.ClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: clusterv1alpha1.ClusterSetGlobal},
		Spec: clusterv1alpha1.ClusterSetBindingSpec{ClusterSet: clusterv1alpha1.ClusterSetGlobal}}
	placement := &clusterv1alpha1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "everywhere"}}
	for _, o := range []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, binding, placement, benchAddOnObject(ns)} {
		if err := admin.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	start := time.Now()
	progress(fmt.Sprintf("enabling add-on %s on %d clusters by placement", benchAddOn, o.Clusters))
	if err := waitAvailable(ctx, admin, o.Clusters, o.Timeout); err != nil {
		return err
	}
	result := AddOnResult{Clusters: o.Clusters, EnableSeconds: time.Since(start).Seconds()}

	progress(fmt.Sprintf("counting the hub's writes at rest for %s", o.Rest))
	before, err := measure.SettledMetrics(ctx, fleet.kube)
	if err != nil {
		return err
	}
	restStart := time.Now()
	if err := sleep(ctx, o.Rest); err != nil {
		return err
	}
	after, err := measure.ScrapeHubMetrics(ctx, fleet.kube)
	if err != nil {
		return err
	}
	elapsed := time.Since(restStart)
	beforeCounts, err := measure.RequestCountsOf(before)
	if err != nil {
		return err
	}
	afterCounts, err := measure.RequestCountsOf(after)
	if err != nil {
		return err
	}
	perClusterMinute := func(n float64) float64 { return n / float64(o.Clusters) / elapsed.Minutes() }
	result.AtRest = RestResult{Seconds: elapsed.Seconds(), WritesByResource: map[string]float64{}}
	for resource, n := range afterCounts.Since(beforeCounts).WritesByResource() {
		if resource == "leases" {
			result.AtRest.LeaseWrites = perClusterMinute(n)
			continue
		}
		result.AtRest.WritesByResource[resource] = perClusterMinute(n)
		result.AtRest.Writes += perClusterMinute(n)
		if slices.Contains(addOnResources, resource) {
			result.AddOnWrites += perClusterMinute(n)
		}
	}
	printAddOn(out, &result)
	return writeJSON(o.Out, &result)
}

// benchAddOnObject is the add-on: a ConfigMap and a Deployment per cluster, installed by Placement ns/everywhere.
func benchAddOnObject(ns string) *addonv1alpha1.AddOn {
	manifest := func(doc string) workv1alpha1.Manifest {
		return workv1alpha1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(doc)}}
	}
	return &addonv1alpha1.AddOn{ObjectMeta: metav1.ObjectMeta{Name: benchAddOn}, Spec: addonv1alpha1.AddOnSpec{
		InstallStrategy: addonv1alpha1.InstallStrategy{Type: addonv1alpha1.InstallPlacements,
			Placements: []addonv1alpha1.PlacementStrategy{{Name: "everywhere", Namespace: ns}}},
		Template: addonv1alpha1.AddOnTemplate{Manifests: []workv1alpha1.Manifest{
			manifest(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bench-config"},"data":{"cluster":"{{CLUSTER_NAME}}"}}`),
			manifest(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"bench-agent"},"spec":{"replicas":1,` +
				`"selector":{"matchLabels":{"app":"bench-agent"}},"template":{"metadata":{"labels":{"app":"bench-agent"}},` +
				`"spec":{"containers":[{"name":"agent","image":"registry.k8s.io/pause:3.10"}]}}}}`),
		}},
	}}
}

// waitAvailable waits until n ClusterAddOns of the benchmark's add-on are Available.
func waitAvailable(ctx context.Context, admin client.Client, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		list := &addonv1alpha1.ClusterAddOnList{}
		if err := admin.List(ctx, list, client.MatchingLabels{addonv1alpha1.LabelAddOn: benchAddOn}); err != nil {
			return err
		}
		available := 0
		for _, c := range list.Items {
			if meta.IsStatusConditionTrue(c.Status.Conditions, addonv1alpha1.ConditionAvailable) {
				available++
			}
		}
		if available >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("add-on %s Available on %d of %d clusters after %s", benchAddOn, available, n, timeout)
		}
		if err := sleep(ctx, time.Second); err != nil {
			return err
		}
	}
}

func printAddOn(out io.Writer, r *AddOnResult) {
	a := r.AtRest
	fmt.Fprintf(out, "add-on on %d hollow clusters: Available everywhere %.1f s after it was created\n", r.Clusters, r.EnableSeconds)
	fmt.Fprintf(out, "at rest (%.0f s), per cluster and minute: %.3f add-on writes (goal ≤ 1), %.3f writes in all, %.1f Lease renewals\n",
		a.Seconds, r.AddOnWrites, a.Writes, a.LeaseWrites)
	for _, resource := range slices.Sorted(maps.Keys(a.WritesByResource)) {
		fmt.Fprintf(out, "         %-28s %.3f\n", resource, a.WritesByResource[resource])
	}
}
