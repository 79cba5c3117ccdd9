package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/bench/hollow"
	"github.com/flotilla-io/flotilla/internal/clusterstatus"
)

// DashboardOptions configure `flotilla bench dashboard`.
type DashboardOptions struct {
	// Clusters is the number of hollow clusters; Templates the number of Deployments, each placed on about
	// Spread of them.
	Clusters, Templates, Spread int
	// Requests is how many times each page is fetched; Updates how many live changes are timed.
	Requests, Updates int
	// Settle is how long the hub runs, once every template is placed (and after each restart), before it is
	// measured.
	Settle time.Duration
	// Baseline restarts the hub on the fleet without the dashboard, then with it, for the memory the
	// dashboard adds. Without it, the hub that placed the templates is measured.
	Baseline bool
	// Out, if set, receives the results as JSON.
	Out string
}

// Validate checks the options before anything starts.
func (o *DashboardOptions) Validate() error {
	switch {
	case o.Clusters < 1:
		return fmt.Errorf("--clusters %d: must be at least 1", o.Clusters)
	case o.Templates < 1:
		return fmt.Errorf("--templates %d: must be at least 1", o.Templates)
	case o.Spread < 1 || o.Spread > o.Clusters:
		return fmt.Errorf("--spread %d: must be between 1 and --clusters (%d)", o.Spread, o.Clusters)
	case o.Requests < 1:
		return fmt.Errorf("--requests %d: must be at least 1", o.Requests)
	case o.Updates < 1:
		return fmt.Errorf("--updates %d: must be at least 1", o.Updates)
	case o.Settle < 0:
		return fmt.Errorf("--settle %s: must not be negative", o.Settle)
	case o.Baseline && o.Settle < clusterstatus.HeartbeatPeriod:
		return fmt.Errorf("--settle %s: must be at least one heartbeat (%s) with --baseline, so that every cluster has reported to each restarted hub", o.Settle, clusterstatus.HeartbeatPeriod)
	}
	return nil
}

// DashboardResult is what `flotilla bench dashboard` measured; durations in seconds.
type DashboardResult struct {
	Clusters  int `json:"clusters"`
	Templates int `json:"templates"`
	Spread    int `json:"spread"`
	// Policies place the templates, one per group of Spread clusters.
	Policies        int     `json:"policies"`
	RegisterSeconds float64 `json:"registerSeconds"`
	// PlacedSeconds is from the first template created to every one scheduled and acknowledged everywhere.
	PlacedSeconds float64 `json:"placedSeconds"`
	// Pages are fleet, workloads (its default view) and workloadsAll (every row).
	Pages map[string]PageTimes `json:"pages"`
	// PageReads are the lists behind the fleet and the workloads pages, timed as the admin from the
	// benchmark's process: the part of a page's time that is reading the hub.
	PageReads map[string]map[string]float64 `json:"pageReads"`
	Live      LiveUpdates                   `json:"live"`
	Memory    DashboardMemory               `json:"memory"`
	// Watched is the metadata the dashboard's change watch holds, measured as JSON.
	Watched WatchedMetadata `json:"watched"`
}

// PageTimes are sequential GETs of one page as the admin, from the request to its last byte.
type PageTimes struct {
	Path    string             `json:"path"`
	Bytes   int                `json:"bytes"`
	Rows    int                `json:"rows"` // tiles or workload rows on the page
	Seconds map[string]float64 `json:"seconds"`
}

// DashboardMemory is the hub's resident memory, each sampled every second for a few seconds.
type DashboardMemory struct {
	// WithoutDashboard is the hub started with --dashboard=false, at rest (with --baseline).
	WithoutDashboard *RSS `json:"withoutDashboard,omitempty"`
	// AtRest, AfterPages and StreamOpen are the hub with the dashboard: at rest, after the page requests,
	// and after the live changes with the event stream still open.
	AtRest     RSS `json:"atRest"`
	AfterPages RSS `json:"afterPages"`
	StreamOpen RSS `json:"streamOpen"`
	// ExtraMiB is what the dashboard adds, median against median, at rest and at most (the largest of the
	// three against the hub without it); with --baseline only.
	ExtraMiB map[string]float64 `json:"extraMiB,omitempty"`
}

// RSS is the median and the largest of a few samples, in MiB.
type RSS struct {
	MedianMiB float64 `json:"medianMiB"`
	MaxMiB    float64 `json:"maxMiB"`
}

const (
	// groupLabel puts each hollow cluster in one group of about Spread clusters; the templates of a group
	// are placed on all of its clusters by the group's policy.
	groupLabel = "bench.flotilla.io/group"
	// liveTaint is the taint the live changes put on a cluster and take off again; every policy tolerates
	// it, so that it changes the fleet page and no placement.
	liveTaint = "bench.flotilla.io/live"
)

// RunDashboard starts a hub as a child process, joins Clusters hollow clusters, places Templates
// Deployments on Spread clusters each, and measures the dashboard on that hub: how long its pages take, how
// soon a change shows on an open page, and (with Baseline) how much memory it costs the hub.
func RunDashboard(ctx context.Context, o DashboardOptions, out io.Writer, progress func(string)) error {
	if err := o.Validate(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fleet, err := startHollowFleet(ctx, "dashboard", o.Clusters, progress)
	if err != nil {
		return err
	}
	defer fleet.stop()
	result := DashboardResult{Clusters: o.Clusters, Templates: o.Templates, Spread: o.Spread, Policies: groups(o),
		RegisterSeconds: fleet.registered.Seconds()}
	progress(fmt.Sprintf("placing %d Deployments on %d clusters each, by %d policies", o.Templates, o.Spread, result.Policies))
	started := time.Now()
	if err := placeTemplates(ctx, fleet.admin, o, progress); err != nil {
		return err
	}
	result.PlacedSeconds = time.Since(started).Seconds()
	progress(fmt.Sprintf("every template scheduled and acknowledged after %.1fs", result.PlacedSeconds))

	// With a baseline, both hubs measured are restarts on the fleet built above, so that neither carries the
	// heap the placement left behind.
	if o.Baseline {
		progress("restarting the hub without the dashboard")
		if err := fleet.restartHub(ctx, "--dashboard=false"); err != nil {
			return err
		}
		base, err := settled(ctx, fleet, o.Settle)
		if err != nil {
			return err
		}
		result.Memory.WithoutDashboard = &base
		if err := expectNoDashboard(ctx, fleet.dashboardPort); err != nil {
			return err
		}
		progress("restarting the hub with the dashboard")
		if err := fleet.restartHub(ctx); err != nil {
			return err
		}
	}
	if result.Memory.AtRest, err = settled(ctx, fleet, o.Settle); err != nil {
		return err
	}
	d, err := newDashboardClient(fleet.config, fleet.dashboardPort)
	if err != nil {
		return err
	}
	progress(fmt.Sprintf("timing %d requests of each page", o.Requests))
	if result.Pages, err = d.timePages(ctx, o); err != nil {
		return err
	}
	if result.Memory.AfterPages, err = sampleRSS(ctx, fleet); err != nil {
		return err
	}
	if result.PageReads, err = timeReads(ctx, fleet.admin); err != nil {
		return err
	}
	if result.Watched, err = measureWatched(ctx, fleet.config); err != nil {
		return err
	}
	progress(fmt.Sprintf("timing %d live changes", o.Updates))
	if result.Live, err = d.timeLive(ctx, fleet.admin, o); err != nil {
		return err
	}
	if result.Memory.StreamOpen, err = sampleRSS(ctx, fleet); err != nil {
		return err
	}
	d.stopStream()
	if base := result.Memory.WithoutDashboard; base != nil {
		m := &result.Memory
		m.ExtraMiB = map[string]float64{"atRest": m.AtRest.MedianMiB - base.MedianMiB,
			"max": max(m.AtRest.MaxMiB, m.AfterPages.MaxMiB, m.StreamOpen.MaxMiB) - base.MedianMiB}
	}
	printDashboard(out, &result)
	return writeJSON(o.Out, &result)
}

// groups is how many groups of about Spread clusters the fleet has: the last takes the clusters left over.
func groups(o DashboardOptions) int { return o.Clusters / o.Spread }

func groupName(g int) string { return fmt.Sprintf("g%03d", g) }

// placeTemplates labels every cluster with its group, makes one policy per group that places the group's
// Deployments on every cluster of the group, creates the Deployments round the groups, and waits until every
// one is scheduled and acknowledged by all its clusters.
func placeTemplates(ctx context.Context, admin client.Client, o DashboardOptions, progress func(string)) error {
	n := groups(o)
	for i := range o.Clusters {
		c := &clusterv1alpha1.Cluster{}
		if err := admin.Get(ctx, client.ObjectKey{Name: hollow.ClusterName(i)}, c); err != nil {
			return err
		}
		patch := client.MergeFrom(c.DeepCopy())
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		c.Labels[groupLabel] = groupName(min(i/o.Spread, n-1))
		if err := admin.Patch(ctx, c, patch); err != nil {
			return err
		}
	}
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNamespace}}); err != nil {
		return err
	}
	for g := range n {
		group := map[string]string{groupLabel: groupName(g)}
		if err := admin.Create(ctx, &policyv1alpha1.PropagationPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "group-" + groupName(g), Namespace: benchNamespace},
			Spec: policyv1alpha1.PropagationSpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment",
					LabelSelector: &metav1.LabelSelector{MatchLabels: group}}},
				Placement: policyv1alpha1.Placement{
					ClusterAffinity:    &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: group}},
					ClusterTolerations: []corev1.Toleration{{Key: liveTaint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
				},
			},
		}); err != nil {
			return err
		}
	}
	if err := createTemplates(ctx, admin, o.Templates, n); err != nil {
		return err
	}
	return waitPlaced(ctx, admin, o.Templates, progress)
}

func templateName(i int) string { return fmt.Sprintf("dash-%04d", i) }

// createTemplates creates n one-replica Deployments, from a few clients at once, template i in group i mod
// groups.
func createTemplates(ctx context.Context, admin client.Client, n, groups int) error {
	const workers = 16
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n && errs[w] == nil; i += workers {
				d := benchDeployment(templateName(i), benchNamespace, 1, "nginx:1")
				d.Labels[groupLabel] = groupName(i % groups)
				errs[w] = admin.Create(ctx, d)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// waitPlaced waits until n bindings are scheduled and every cluster they name has applied its Work.
func waitPlaced(ctx context.Context, admin client.Client, n int, progress func(string)) error {
	deadline := time.Now().Add(15 * time.Minute)
	for polls := 1; ; polls++ {
		bindings := &workv1alpha1.ResourceBindingList{}
		if err := admin.List(ctx, bindings, client.InNamespace(benchNamespace)); err != nil {
			return err
		}
		placed := 0
		for i := range bindings.Items {
			if isPlaced(&bindings.Items[i]) {
				placed++
			}
		}
		if placed >= n {
			return nil
		}
		if polls%15 == 0 {
			progress(fmt.Sprintf("%d/%d templates placed and acknowledged", placed, n))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d templates placed and acknowledged after 15 minutes", placed, n)
		}
		if err := sleep(ctx, time.Second); err != nil {
			return err
		}
	}
}

func isPlaced(b *workv1alpha1.ResourceBinding) bool {
	if !meta.IsStatusConditionTrue(b.Status.Conditions, workv1alpha1.ConditionScheduled) || len(b.Spec.Clusters) == 0 {
		return false
	}
	applied := map[string]bool{}
	for _, item := range b.Status.AggregatedStatus {
		applied[item.ClusterName] = item.Applied
	}
	for _, t := range b.Spec.Clusters {
		if !applied[t.Name] {
			return false
		}
	}
	return true
}

// expectNoDashboard checks that a hub started with --dashboard=false serves nothing on the dashboard's port.
func expectNoDashboard(ctx context.Context, port int) error {
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err == nil {
		_ = conn.Close()
		return fmt.Errorf("the hub started with --dashboard=false listens on the dashboard's port %d", port)
	}
	return nil
}

func printDashboard(out io.Writer, r *DashboardResult) {
	fmt.Fprintf(out, "%d hollow clusters, %d Deployments on %d clusters each (%d policies)\n", r.Clusters, r.Templates, r.Spread, r.Policies)
	fmt.Fprintf(out, "all joined and Ready %.1f s; every template placed and acknowledged %.1f s\n", r.RegisterSeconds, r.PlacedSeconds)
	fmt.Fprintf(out, "\n%-36s %8s %8s %8s %8s %10s\n", "page (ms, as the admin)", "p50", "p90", "p99", "max", "bytes")
	for _, name := range pageNames {
		p := r.Pages[name]
		fmt.Fprintf(out, "%-36s %8.1f %8.1f %8.1f %8.1f %10d\n", fmt.Sprintf("%s (%d rows)", p.Path, p.Rows),
			p.Seconds["p50"]*1000, p.Seconds["p90"]*1000, p.Seconds["p99"]*1000, p.Seconds["max"]*1000, p.Bytes)
	}
	for _, name := range []string{"fleet", "workloads"} {
		q := r.PageReads[name]
		fmt.Fprintf(out, "%-36s %8.1f %8.1f %8.1f %8.1f\n", "  its lists: "+name, q["p50"]*1000, q["p90"]*1000, q["p99"]*1000, q["max"]*1000)
	}
	fmt.Fprintf(out, "the change watch holds %d objects' metadata: %.1f MiB as JSON, %.1f MiB without managedFields\n",
		r.Watched.Objects, float64(r.Watched.Bytes)/(1<<20), float64(r.Watched.BytesWithoutManagedFields)/(1<<20))
	fmt.Fprintf(out, "\n%-36s %8s %8s %8s %8s\n", "live change (s, from its request)", "p50", "p90", "p99", "max")
	row := func(name string, q map[string]float64) {
		if q == nil {
			fmt.Fprintf(out, "%-36s %8s\n", name, "no sample")
			return
		}
		fmt.Fprintf(out, "%-36s %8.3f %8.3f %8.3f %8.3f\n", name, q["p50"], q["p90"], q["p99"], q["max"])
	}
	for _, kind := range []string{"", changeTaint, changeScale} {
		t, label := r.Live.All, "all"
		if kind != "" {
			t, label = r.Live.ByChange[kind], kind
		}
		row("→ first event ("+label+")", t.Event)
		row("→ page shows it ("+label+")", t.Page)
	}
	fmt.Fprintf(out, "%d changes, %d not shown within %s; %.2f events/s at rest; the stream reconnected %d times\n",
		r.Live.Updates, r.Live.Missed, liveTimeout, r.Live.EventsPerSecondAtRest, r.Live.Reconnects)
	m := r.Memory
	fmt.Fprintf(out, "\nhub RSS (MiB, median / max of 5 s)\n")
	if m.WithoutDashboard != nil {
		fmt.Fprintf(out, "  without the dashboard, at rest   %6.0f / %.0f\n", m.WithoutDashboard.MedianMiB, m.WithoutDashboard.MaxMiB)
	}
	fmt.Fprintf(out, "  with it, at rest                 %6.0f / %.0f\n", m.AtRest.MedianMiB, m.AtRest.MaxMiB)
	fmt.Fprintf(out, "  after the page requests          %6.0f / %.0f\n", m.AfterPages.MedianMiB, m.AfterPages.MaxMiB)
	fmt.Fprintf(out, "  with the event stream open       %6.0f / %.0f\n", m.StreamOpen.MedianMiB, m.StreamOpen.MaxMiB)
	if m.ExtraMiB != nil {
		fmt.Fprintf(out, "  the dashboard adds               %6.0f at rest, %.0f at most (goal ≤ 50)\n", m.ExtraMiB["atRest"], m.ExtraMiB["max"])
	}
}
