// Package clusterstatus keeps the hub's view of each member: the reporter (agent side, and the hub itself for
// Push clusters) renews the cluster's Lease and writes its status when it changes; the health monitor (hub
// side) turns a stale Lease or a failing readyz into a Ready condition and taints.
package clusterstatus

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// Collect reads a member's version, health, nodes, pod CIDRs, resources (with its resource models graded by
// models, the cluster's spec.resourceModels) and served APIs. It fails only when the member cannot be reached
// at all; a failing health endpoint or API discovery is part of the result (discovery in the APIsComplete
// condition, the only condition it returns).
func Collect(ctx context.Context, member kubernetes.Interface, agentVersion string, models []clusterv1alpha1.ResourceModel) (*clusterv1alpha1.ClusterStatus, error) {
	version, err := member.Discovery().ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("member API unreachable: %w", err)
	}
	status := &clusterv1alpha1.ClusterStatus{
		KubernetesVersion: version.GitVersion,
		Platform:          version.Platform,
		AgentVersion:      agentVersion,
		Health:            &clusterv1alpha1.HealthEndpoints{Livez: probe(ctx, member, "/livez"), Readyz: probe(ctx, member, "/readyz")},
	}
	nodes, err := member.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, fmt.Errorf("listing member nodes: %w", err)
	}
	status.PodCIDRs = podCIDRs(nodes.Items)
	if status.NodeSummary, status.ResourceSummary, err = resources(ctx, member, nodes.Items, models); err != nil {
		return nil, err
	}
	var complete metav1.Condition
	status.APIEnablements, complete = apiEnablements(member.Discovery())
	status.Conditions = []metav1.Condition{complete}
	return status, nil
}

// probe returns "ok" or, trimmed, what the endpoint said instead.
func probe(ctx context.Context, member kubernetes.Interface, path string) string {
	body, err := member.Discovery().RESTClient().Get().AbsPath(path).DoRaw(ctx)
	if err == nil {
		return "ok"
	}
	msg := strings.TrimSpace(string(body))
	if msg == "" {
		msg = err.Error()
	}
	return truncate(msg, 512)
}

// resources counts nodes and sums allocatable capacity over ready nodes, the requests of non-terminated pods
// on them (allocated), and the requests of pods not yet bound (allocating); it grades the nodes' free
// capacity into resource models (nodeGroups).
func resources(ctx context.Context, member kubernetes.Interface, nodes []corev1.Node, models []clusterv1alpha1.ResourceModel) (*clusterv1alpha1.NodeSummary, *clusterv1alpha1.ResourceSummary, error) {
	summary := &clusterv1alpha1.NodeSummary{TotalNum: int32(len(nodes))}
	res := &clusterv1alpha1.ResourceSummary{Allocatable: corev1.ResourceList{}, Allocated: corev1.ResourceList{}, Allocating: corev1.ResourceList{}}
	ready := map[string]bool{}
	for _, n := range nodes {
		if !nodeReady(&n) {
			continue
		}
		ready[n.Name] = true
		summary.ReadyNum++
		add(res.Allocatable, n.Status.Allocatable)
	}
	pods, err := member.CoreV1().Pods("").List(ctx, metav1.ListOptions{
		ResourceVersion: "0", FieldSelector: "status.phase!=Succeeded,status.phase!=Failed",
	})
	if err != nil {
		return nil, nil, fmt.Errorf("listing member pods: %w", err)
	}
	used := map[string]corev1.ResourceList{}
	for _, p := range pods.Items {
		switch {
		case p.Spec.NodeName == "":
			add(res.Allocating, podRequests(&p))
		case ready[p.Spec.NodeName]:
			requests := podRequests(&p)
			add(res.Allocated, requests)
			if used[p.Spec.NodeName] == nil {
				used[p.Spec.NodeName] = corev1.ResourceList{}
			}
			add(used[p.Spec.NodeName], requests)
		}
	}
	res.NodeGroups = nodeGroups(models, nodes, used)
	return summary, res, nil
}

// podCIDRs is the union of the nodes' spec.podCIDRs as the fewest prefixes that cover exactly it, sorted.
// Nodes take their ranges from one or a few cluster ranges, so a thousand nodes with a /24 each make one or a
// few entries in the Cluster's status, not a thousand. Malformed entries are left out.
func podCIDRs(nodes []corev1.Node) []string {
	var prefixes []netip.Prefix
	for _, n := range nodes {
		for _, s := range n.Spec.PodCIDRs {
			if p, err := netip.ParsePrefix(s); err == nil {
				prefixes = append(prefixes, p.Masked())
			}
		}
	}
	slices.SortFunc(prefixes, func(a, b netip.Prefix) int {
		return cmp.Or(a.Addr().Compare(b.Addr()), cmp.Compare(a.Bits(), b.Bits()))
	})
	// merged stays sorted and disjoint: in address order only its last prefix can contain the next one, and
	// two halves of one parent meet at its end, where they fold into the parent.
	var merged []netip.Prefix
	for _, p := range prefixes {
		if n := len(merged); n > 0 && merged[n-1].Bits() <= p.Bits() && merged[n-1].Contains(p.Addr()) {
			continue
		}
		merged = append(merged, p)
		for n := len(merged); n >= 2 && halves(merged[n-2], merged[n-1]); n = len(merged) {
			parent, _ := merged[n-1].Addr().Prefix(merged[n-1].Bits() - 1)
			merged = append(merged[:n-2], parent)
		}
	}
	var out []string
	for _, p := range merged {
		out = append(out, p.String())
	}
	return out
}

// halves reports whether a and b are the two halves of one prefix.
func halves(a, b netip.Prefix) bool {
	if a.Bits() != b.Bits() || a.Bits() == 0 || a == b {
		return false
	}
	pa, _ := a.Addr().Prefix(a.Bits() - 1)
	pb, _ := b.Addr().Prefix(b.Bits() - 1)
	return pa == pb
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podRequests is what a pod reserves on its node: its requests by Kubernetes' rule (interpreter.PodRequests,
// the rule one replica's requests are counted by) and one pod slot.
func podRequests(p *corev1.Pod) corev1.ResourceList {
	total := interpreter.PodRequests(&p.Spec)
	total[corev1.ResourcePods] = *resource.NewQuantity(1, resource.DecimalSI)
	return total
}

func add(sum, more corev1.ResourceList) {
	for name, q := range more {
		cur := sum[name]
		cur.Add(q)
		sum[name] = cur
	}
}

// Reasons of the APIsComplete condition.
const (
	ReasonDiscoveryComplete = "DiscoveryComplete"
	ReasonDiscoveryPartial  = "DiscoveryPartial"
	ReasonDiscoveryFailed   = "DiscoveryFailed"
)

// apiEnablements lists every group/version the member serves with its resources, sorted, subresources left
// out, and says in an APIsComplete condition whether the list is whole. Discovery of one group fails often
// (an aggregated API such as metrics-server that is down), and a failure is never read as "not served": the
// list is marked incomplete, so the scheduler keeps workloads where they are, and the reporter keeps the last
// known entries of what could not be discovered.
func apiEnablements(d discovery.ServerResourcesInterface) ([]clusterv1alpha1.APIEnablement, metav1.Condition) {
	_, lists, err := d.ServerGroupsAndResources()
	complete := metav1.Condition{Type: clusterv1alpha1.ClusterConditionAPIsComplete, Status: metav1.ConditionTrue,
		Reason: ReasonDiscoveryComplete, Message: "every API group of the member was discovered"}
	var failed *discovery.ErrGroupDiscoveryFailed
	switch {
	case errors.As(err, &failed):
		gvs := make([]string, 0, len(failed.Groups))
		for gv, gvErr := range failed.Groups {
			gvs = append(gvs, gv.String()+": "+truncate(gvErr.Error(), 200))
		}
		sort.Strings(gvs)
		complete.Status, complete.Reason = metav1.ConditionFalse, ReasonDiscoveryPartial
		complete.Message = truncate(fmt.Sprintf("discovery failed for %d group/versions, their last known resources are kept: %s",
			len(gvs), strings.Join(gvs, "; ")), 1024)
	case err != nil:
		complete.Status, complete.Reason = metav1.ConditionFalse, ReasonDiscoveryFailed
		complete.Message = truncate("discovering the member's APIs failed, the last known list is kept: "+err.Error(), 1024)
	}
	out := make([]clusterv1alpha1.APIEnablement, 0, len(lists))
	for _, l := range lists {
		if l == nil {
			continue
		}
		e := clusterv1alpha1.APIEnablement{GroupVersion: l.GroupVersion}
		for _, r := range l.APIResources {
			if !strings.Contains(r.Name, "/") {
				e.Resources = append(e.Resources, clusterv1alpha1.APIResource{Name: r.Name, Kind: r.Kind})
			}
		}
		slices.SortFunc(e.Resources, func(a, b clusterv1alpha1.APIResource) int { return strings.Compare(a.Name, b.Name) })
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GroupVersion < out[j].GroupVersion })
	return out, complete
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
