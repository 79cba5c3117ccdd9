// Package placement decides Open Cluster Management-style Placements: it picks Clusters from the
// ClusterSets bound to a Placement's namespace by its predicates, taints and scores, splits them into
// decision groups, and writes them to PlacementDecisions, for tools that read those (Argo CD's
// clusterDecisionResource generator among them).
package placement

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// Input is what a decision is made from, besides the Placement.
type Input struct {
	// Sets are the ClusterSets bound to the Placement's namespace.
	Sets []clusterv1alpha1.ClusterSet
	// Clusters are every Cluster of the hub.
	Clusters []clusterv1alpha1.Cluster
	// Decided are the Clusters the Placement decided last time (Steady).
	Decided map[string]bool
	// Decisions counts, per Cluster, the other Placements that decided it (Balance).
	Decisions map[string]int
}

// Group is one decision group: its name (empty for a group of clustersPerDecisionGroup) and its Clusters,
// sorted by name.
type Group struct {
	Name     string
	Clusters []string
}

// Result is what a Placement decided: the candidates it could pick from (after sets, predicates and
// taints), the picked Clusters in score order, and the groups they fall in.
type Result struct {
	Candidates int
	Selected   []string
	Groups     []Group
}

// Decide picks a Placement's Clusters. An error is a misconfiguration, in words that name the field.
func Decide(p *clusterv1alpha1.Placement, in Input) (Result, error) {
	predicates, err := selectors(p.Spec.Predicates, "spec.predicates[%d].requiredClusterSelector.labelSelector")
	if err != nil {
		return Result{}, err
	}
	sets := chosenSets(p.Spec.ClusterSets, in.Sets)
	var candidates []*clusterv1alpha1.Cluster
	for i := range in.Clusters {
		c := &in.Clusters[i]
		if c.DeletionTimestamp == nil && inAny(sets, c.Labels) && matchesAny(predicates, c.Labels) && tolerated(c.Spec.Taints, p.Spec.Tolerations) {
			candidates = append(candidates, c)
		}
	}
	scores, err := Score(p.Spec.PrioritizerPolicy, candidates, in)
	if err != nil {
		return Result{}, err
	}
	slices.SortFunc(candidates, func(a, b *clusterv1alpha1.Cluster) int {
		return cmp.Or(cmp.Compare(scores[b.Name], scores[a.Name]), cmp.Compare(a.Name, b.Name))
	})
	n := len(candidates)
	if p.Spec.NumberOfClusters != nil && int(*p.Spec.NumberOfClusters) < n {
		n = int(*p.Spec.NumberOfClusters)
	}
	result := Result{Candidates: len(candidates)}
	picked := candidates[:n]
	for _, c := range picked {
		result.Selected = append(result.Selected, c.Name)
	}
	result.Groups, err = Groups(p.Spec.DecisionStrategy.GroupStrategy, picked)
	return result, err
}

// chosenSets are the bound sets the Placement names, or all of them when it names none.
func chosenSets(names []string, bound []clusterv1alpha1.ClusterSet) []clusterv1alpha1.ClusterSet {
	if len(names) == 0 {
		return bound
	}
	var out []clusterv1alpha1.ClusterSet
	for _, s := range bound {
		if slices.Contains(names, s.Name) {
			out = append(out, s)
		}
	}
	return out
}

func inAny(sets []clusterv1alpha1.ClusterSet, l map[string]string) bool {
	return slices.ContainsFunc(sets, func(s clusterv1alpha1.ClusterSet) bool { return s.Contains(l) })
}

func matchesAny(selectors []labels.Selector, l map[string]string) bool {
	return len(selectors) == 0 || slices.ContainsFunc(selectors, func(s labels.Selector) bool { return s.Matches(labels.Set(l)) })
}

// tolerated says whether every NoSchedule and NoExecute taint is tolerated; PreferNoSchedule never excludes.
func tolerated(taints []corev1.Taint, tolerations []corev1.Toleration) bool {
	for i := range taints {
		t := &taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		if !slices.ContainsFunc(tolerations, func(tol corev1.Toleration) bool { return tol.ToleratesTaint(klog.Background(), t, false) }) {
			return false
		}
	}
	return true
}

// selectors parses the predicates' label selectors; field is the path of one, with %d for its index.
func selectors(predicates []clusterv1alpha1.ClusterPredicate, field string) ([]labels.Selector, error) {
	out := make([]labels.Selector, len(predicates))
	for i := range predicates {
		s, err := metav1.LabelSelectorAsSelector(&predicates[i].RequiredClusterSelector.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf(field+": %w", i, err)
		}
		out[i] = s
	}
	return out, nil
}

// Groups splits the picked Clusters into decision groups: each named group takes, in order, the Clusters
// its selector matches that no earlier group took; the rest fall into groups of clustersPerDecisionGroup
// (all in one without it). There is always at least one group, so a Placement that picked nothing still has
// a PlacementDecision to read.
func Groups(gs clusterv1alpha1.GroupStrategy, picked []*clusterv1alpha1.Cluster) ([]Group, error) {
	taken := map[string]bool{}
	var groups []Group
	for i, dg := range gs.DecisionGroups {
		sel, err := metav1.LabelSelectorAsSelector(&dg.GroupClusterSelector.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf("spec.decisionStrategy.groupStrategy.decisionGroups[%d].groupClusterSelector.labelSelector: %w", i, err)
		}
		g := Group{Name: dg.GroupName}
		for _, c := range picked {
			if !taken[c.Name] && sel.Matches(labels.Set(c.Labels)) {
				taken[c.Name] = true
				g.Clusters = append(g.Clusters, c.Name)
			}
		}
		slices.Sort(g.Clusters)
		groups = append(groups, g)
	}
	var rest []string
	for _, c := range picked {
		if !taken[c.Name] {
			rest = append(rest, c.Name)
		}
	}
	slices.Sort(rest)
	size, err := GroupSize(gs.ClustersPerDecisionGroup, len(picked))
	if err != nil {
		return nil, err
	}
	for start := 0; start < len(rest); start += size {
		groups = append(groups, Group{Clusters: rest[start:min(start+size, len(rest))]})
	}
	if len(groups) == 0 {
		groups = []Group{{}}
	}
	return groups, nil
}

// GroupSize is the size of the unnamed decision groups: clustersPerDecisionGroup as a count, or as a
// percentage of total rounded up; at least 1, and every Cluster in one group when it is unset.
func GroupSize(v *intstr.IntOrString, total int) (int, error) {
	const field = "spec.decisionStrategy.groupStrategy.clustersPerDecisionGroup"
	if v == nil {
		return max(total, 1), nil
	}
	if v.Type == intstr.Int {
		if v.IntVal < 1 {
			return 0, fmt.Errorf("%s: %d is not a group size: want at least 1", field, v.IntVal)
		}
		return int(v.IntVal), nil
	}
	digits, ok := strings.CutSuffix(v.StrVal, "%")
	pct, err := strconv.Atoi(digits)
	if !ok || err != nil || pct < 1 || pct > 100 {
		return 0, fmt.Errorf("%s: %q is not a group size: want a count of at least 1 or a percentage from 1%% to 100%%, for example 25%%", field, v.StrVal)
	}
	return max(int(math.Ceil(float64(total)*float64(pct)/100)), 1), nil
}
