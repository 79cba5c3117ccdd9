package dashboard

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/clusterstatus"
)

// tile is one cluster as the fleet page shows it.
type tile struct {
	Name, Mode, Version, Region, Zone string
	Ready, ReadyReason                string // Ready condition status (True, False, Unknown) and reason
	Healthy                           bool
	Nodes                             string
	Bars                              []bar
	Taints                            []string
	LastSeen                          string
}

// bar is a resource's allocated share of what is allocatable.
type bar struct {
	Name, Used, Total string
	Percent           int
}

// region is a region/zone group of tiles, unhealthy clusters first.
type region struct {
	Region, Zone string
	Unhealthy    int
	Tiles        []tile
}

type fleetPage struct {
	Groups           []region
	Total, Unhealthy int
}

func (s *Server) fleet(r *http.Request, c client.Client) (string, any, error) {
	clusters := &clusterv1alpha1.ClusterList{}
	if err := c.List(r.Context(), clusters); err != nil {
		return "", nil, err
	}
	seen := heartbeats(r, c)
	byGroup := map[[2]string]*region{}
	page := &fleetPage{Total: len(clusters.Items)}
	for i := range clusters.Items {
		t := newTile(&clusters.Items[i], seen, time.Now())
		key := [2]string{t.Region, t.Zone}
		g := byGroup[key]
		if g == nil {
			g = &region{Region: t.Region, Zone: t.Zone}
			byGroup[key] = g
		}
		g.Tiles = append(g.Tiles, t)
		if !t.Healthy {
			g.Unhealthy++
			page.Unhealthy++
		}
	}
	for _, g := range byGroup {
		slices.SortFunc(g.Tiles, unhealthyFirst)
		page.Groups = append(page.Groups, *g)
	}
	slices.SortFunc(page.Groups, func(a, b region) int {
		return cmp.Or(cmp.Compare(b.Unhealthy, a.Unhealthy), cmp.Compare(a.Region, b.Region), cmp.Compare(a.Zone, b.Zone))
	})
	return "Fleet", page, nil
}

func unhealthyFirst(a, b tile) int {
	return cmp.Or(cmp.Compare(boolRank(a.Healthy), boolRank(b.Healthy)), cmp.Compare(a.Name, b.Name))
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// heartbeats are the last renewals of the clusters' Leases; none when the person may not list Leases.
func heartbeats(r *http.Request, c client.Client) map[string]time.Time {
	seen, err := clusterstatus.LastRenewals(r.Context(), c)
	if err != nil {
		return map[string]time.Time{}
	}
	return seen
}

func newTile(c *clusterv1alpha1.Cluster, seen map[string]time.Time, now time.Time) tile {
	t := tile{Name: c.Name, Mode: string(c.Spec.SyncMode), Version: or(c.Status.KubernetesVersion, "unknown"),
		Region: or(c.Spec.Region, "no region"), Zone: "no zone", Ready: "Unknown", LastSeen: "never", Nodes: "-"}
	if len(c.Spec.Zones) > 0 {
		t.Zone = c.Spec.Zones[0]
	}
	if ready := meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ClusterConditionReady); ready != nil {
		t.Ready, t.ReadyReason = string(ready.Status), ready.Reason
	}
	t.Healthy = t.Ready == string(metav1.ConditionTrue) && c.DeletionTimestamp == nil
	if n := c.Status.NodeSummary; n != nil {
		t.Nodes = fmt.Sprintf("%d/%d", n.ReadyNum, n.TotalNum)
	}
	if rs := c.Status.ResourceSummary; rs != nil {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods} {
			used := rs.Allocated[name].DeepCopy()
			used.Add(rs.Allocating[name])
			total := rs.Allocatable[name]
			t.Bars = append(t.Bars, newBar(string(name), used, total))
		}
	}
	for _, taint := range c.Spec.Taints {
		s := taint.Key
		if taint.Value != "" {
			s += "=" + taint.Value
		}
		t.Taints = append(t.Taints, s+":"+string(taint.Effect))
	}
	if at, ok := seen[c.Name]; ok {
		t.LastSeen = duration.HumanDuration(now.Sub(at)) + " ago"
	}
	return t
}

func newBar(name string, used, total resource.Quantity) bar {
	b := bar{Name: name, Used: quantity(name, used), Total: quantity(name, total)}
	if total.MilliValue() > 0 {
		b.Percent = int(min(100, used.MilliValue()*100/total.MilliValue()))
	}
	return b
}

// quantity prints memory in GiB and the rest as it is, so bars read alike across clusters.
func quantity(name string, q resource.Quantity) string {
	if name == string(corev1.ResourceMemory) {
		return fmt.Sprintf("%.1fGi", float64(q.Value())/(1<<30))
	}
	return q.String()
}

func or(s, fallback string) string {
	if strings.TrimSpace(s) == "" {
		return fallback
	}
	return s
}

// clusterPage is one cluster: its tile, conditions, add-ons, APIs, the workloads placed there and its events.
type clusterPage struct {
	Tile       tile
	Conditions []metav1.Condition
	AddOns     addOns
	APIs       []string
	Workloads  []workloadRow
	Events     []event
}

func (s *Server) cluster(r *http.Request, c client.Client) (string, any, error) {
	cl := &clusterv1alpha1.Cluster{}
	if err := c.Get(r.Context(), client.ObjectKey{Name: r.PathValue("name")}, cl); err != nil {
		return "", nil, err
	}
	page := &clusterPage{Tile: newTile(cl, heartbeats(r, c), time.Now()), Conditions: cl.Status.Conditions, AddOns: clusterAddOns(r, c, cl.Name)}
	for _, e := range cl.Status.APIEnablements {
		page.APIs = append(page.APIs, fmt.Sprintf("%s (%d kinds)", e.GroupVersion, len(e.Resources)))
	}
	rows, err := s.listWorkloads(r, c)
	if err != nil {
		return "", nil, err
	}
	for _, row := range rows {
		if slices.ContainsFunc(row.Chips, func(ch chip) bool { return ch.Cluster == cl.Name }) {
			page.Workloads = append(page.Workloads, row)
		}
	}
	page.Events = events(r, c, "", "Cluster", cl.Name)
	return "Cluster " + cl.Name, page, nil
}
