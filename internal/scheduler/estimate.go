package scheduler

import (
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// The estimator: how many replicas of a binding a cluster can really host, node by node, from the resource
// models the cluster reports (status.resourceSummary.nodeGroups) and with no call to the member. A node
// group counts when the replica's node claim lets its pods go there (node selector and required node affinity
// over the group's labels, tolerations over its taints); each grade of the group then hosts, per node, as many
// replicas as the grade's least free amounts allow. Requirements on kubernetes.io/hostname and on node fields
// are not checked (the models keep no per-node names): they count as met.

// modelReplicas is how many replicas of b the cluster's nodes can take by its resource models, at most
// math.MaxInt32; ok is false when the cluster reports no models (an agent from before them, or no node that
// may take pods).
func modelReplicas(b *workv1alpha1.ResourceBindingSpec, c *clusterv1alpha1.Cluster) (n int64, ok bool) {
	rs := c.Status.ResourceSummary
	if rs == nil || rs.NodeGroups == nil {
		return 0, false
	}
	var total int64
	for i := range rs.NodeGroups {
		g := &rs.NodeGroups[i]
		if !claims(b.ReplicaRequirements, g) {
			continue
		}
		for _, grade := range g.Grades {
			if grade.Count <= 0 { // nonsense from a member counts for nothing
				continue
			}
			total = min(total+int64(grade.Count)*perNode(b.ReplicaRequirements, grade.Free), math.MaxInt32)
		}
	}
	return total, true
}

// perNode is how many replicas fit in a node with free capacity free: one pod slot each and their requests.
func perNode(req *workv1alpha1.ReplicaRequirements, free corev1.ResourceList) int64 {
	n := int64(math.MaxInt32)
	if pods, ok := free[corev1.ResourcePods]; ok {
		n = fitting(pods, *resource.NewQuantity(1, resource.DecimalSI))
	}
	if req == nil {
		return n
	}
	for name, request := range req.ResourceRequest {
		if !request.IsZero() {
			n = min(n, fitting(free[name], request))
		}
	}
	return n
}

// claims reports whether a replica's node claim lets it run on the nodes of a group.
func claims(req *workv1alpha1.ReplicaRequirements, g *clusterv1alpha1.NodeGroup) bool {
	var claim workv1alpha1.NodeClaim
	if req != nil && req.NodeClaim != nil {
		claim = *req.NodeClaim
	}
	for _, t := range g.Taints {
		if !slices.ContainsFunc(claim.Tolerations, func(tol corev1.Toleration) bool { return tol.ToleratesTaint(klog.Background(), &t, false) }) {
			return false
		}
	}
	for k, v := range claim.NodeSelector {
		if k != corev1.LabelHostname && g.Labels[k] != v {
			return false
		}
	}
	return affinityMatches(claim.HardNodeAffinity, g.Labels)
}

// affinityMatches reports whether any term of a required node affinity matches labels, leaving out what the
// models cannot answer (kubernetes.io/hostname, node fields): a term that asks only that matches.
func affinityMatches(ns *corev1.NodeSelector, labels map[string]string) bool {
	if ns == nil {
		return true
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: labels}}
	for _, term := range ns.NodeSelectorTerms {
		term.MatchFields = nil
		term.MatchExpressions = slices.DeleteFunc(slices.Clone(term.MatchExpressions), func(r corev1.NodeSelectorRequirement) bool {
			return r.Key == corev1.LabelHostname
		})
		if len(term.MatchExpressions) == 0 {
			return true
		}
		one, err := nodeaffinity.NewNodeSelector(&corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term}})
		if err == nil && one.Match(node) {
			return true
		}
	}
	return false
}

// NodeFit keeps a binding divided by capacity (dynamic weights or Aggregated) off a cluster where, by its
// resource models, no node can run even one replica, and says why: no node its claim lets it on, or which
// requests no such node has free. A cluster the binding runs on stays: its own pods hold the room they use.
// A cluster that reports no models is left to the summed capacity.
type NodeFit struct{}

// PluginNodeFit is NodeFit's name.
const PluginNodeFit = "NodeFit"

func (NodeFit) Name() string { return PluginNodeFit }

func (NodeFit) Filter(b *workv1alpha1.ResourceBindingSpec, c *clusterv1alpha1.Cluster) string {
	if !placedByCapacity(b) || placedOn(b, c.Name) {
		return ""
	}
	if n, ok := modelReplicas(b, c); !ok || n > 0 {
		return ""
	}
	return noFitReason(b.ReplicaRequirements, c.Status.ResourceSummary.NodeGroups)
}

// noFitReason says why no node of groups takes a replica of req.
func noFitReason(req *workv1alpha1.ReplicaRequirements, groups []clusterv1alpha1.NodeGroup) string {
	var grades []clusterv1alpha1.NodeGrade
	for i := range groups {
		if claims(req, &groups[i]) {
			grades = append(grades, groups[i].Grades...)
		}
	}
	if len(grades) == 0 {
		return "have no node the replica's node selector, affinity and tolerations let it on"
	}
	var requests corev1.ResourceList
	if req != nil {
		requests = req.ResourceRequest
	}
	names := make([]corev1.ResourceName, 0, len(requests))
	for name, q := range requests {
		if !q.IsZero() {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var short, all []string
	for _, name := range names {
		all = append(all, amount(name, requests[name]))
		if !slices.ContainsFunc(grades, func(g clusterv1alpha1.NodeGrade) bool { q := g.Free[name]; return q.Cmp(requests[name]) >= 0 }) {
			short = append(short, amount(name, requests[name]))
		}
	}
	fitsAll := func(g clusterv1alpha1.NodeGrade) bool {
		return !slices.ContainsFunc(names, func(name corev1.ResourceName) bool { q := g.Free[name]; return q.Cmp(requests[name]) < 0 })
	}
	switch {
	case len(short) > 0:
		return "have no node that fits " + strings.Join(short, " and ")
	case !slices.ContainsFunc(grades, fitsAll):
		return "have no node that fits " + strings.Join(all, ", ") + " together"
	}
	return "have no node with room for another pod"
}

// amount reads a request the way a person says it: "40 CPU", "64Gi memory", "1 nvidia.com/gpu".
func amount(name corev1.ResourceName, q resource.Quantity) string {
	if name == corev1.ResourceCPU {
		return q.String() + " CPU"
	}
	return q.String() + " " + string(name)
}
