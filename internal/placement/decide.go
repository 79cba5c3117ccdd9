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
	"time"

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
	// Now is the time tolerations with tolerationSeconds are counted to.
	Now time.Time
}

// Group is one decision group: its name (empty for a group of clustersPerDecisionGroup) and its Clusters,
// sorted by name.
type Group struct {
	Name     string
	Clusters []string
}

// Result is what a Placement decided: the candidates it could pick from (after sets, predicates and
// taints), the picked Clusters in score order, the groups they fall in, and why each was picked.
type Result struct {
	Candidates int
	Selected   []string
	Groups     []Group
	// Reasons say why each picked Cluster was picked: its set, the predicate that selected it, and whether
	// it was among the best scored. Nothing that moves without the decision moving: no scores (Steady rises
	// once a Cluster is decided, Balance moves with other Placements) and no tolerated taints (the hub's
	// health taints come and go with a member's health).
	Reasons map[string]string
	// Failed are the Clusters of the chosen sets that no predicate selected because an expression failed on
	// them, with the first failure.
	Failed map[string]string
	// Expires is when the first toleration with tolerationSeconds runs out on a candidate: the Placement
	// must be decided again then. Zero when none does.
	Expires time.Time
}

// Decide picks a Placement's Clusters. An error is a misconfiguration, in words that name the field.
func Decide(p *clusterv1alpha1.Placement, in Input) (Result, error) {
	predicates, err := compilePredicates(p.Spec.Predicates)
	if err != nil {
		return Result{}, err
	}
	sets := chosenSets(p.Spec.ClusterSets, in.Sets)
	result := Result{Reasons: map[string]string{}}
	why := map[string][]string{}
	var candidates []*clusterv1alpha1.Cluster
	for i := range in.Clusters {
		c := &in.Clusters[i]
		set := firstSet(sets, c.Labels)
		if c.DeletionTimestamp != nil || set == "" {
			continue
		}
		ok, until := tolerates(c.Spec.Taints, p.Spec.Tolerations, in.Now)
		if !ok {
			continue
		}
		which, failure := matching(predicates, c)
		if which < 0 {
			if failure != "" {
				if result.Failed == nil {
					result.Failed = map[string]string{}
				}
				result.Failed[c.Name] = failure
			}
			continue
		}
		if !until.IsZero() && (result.Expires.IsZero() || until.Before(result.Expires)) {
			result.Expires = until
		}
		candidates = append(candidates, c)
		why[c.Name] = []string{"in set " + set}
		if len(predicates) > 0 {
			why[c.Name] = append(why[c.Name], fmt.Sprintf("matches predicates[%d]", which))
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
	result.Candidates = len(candidates)
	picked := candidates[:n]
	for _, c := range picked {
		result.Selected = append(result.Selected, c.Name)
		if n < len(candidates) {
			why[c.Name] = append(why[c.Name], fmt.Sprintf("one of the %d best scored", n))
		}
		result.Reasons[c.Name] = strings.Join(why[c.Name], "; ")
	}
	result.Groups, err = Groups(p.Spec.DecisionStrategy.GroupStrategy, picked)
	return result, err
}

// chosenSets are the bound sets the Placement names, or all of them when it names none, by name.
func chosenSets(names []string, bound []clusterv1alpha1.ClusterSet) []clusterv1alpha1.ClusterSet {
	var out []clusterv1alpha1.ClusterSet
	for _, s := range bound {
		if len(names) == 0 || slices.Contains(names, s.Name) {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b clusterv1alpha1.ClusterSet) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// firstSet is the first set (by name) that holds a Cluster with labels l; "" when none does.
func firstSet(sets []clusterv1alpha1.ClusterSet, l map[string]string) string {
	for _, s := range sets {
		if s.Contains(l) {
			return s.Name
		}
	}
	return ""
}

// compiledPredicate is one compiled predicate: a Cluster must match its label selector and every expression.
type compiledPredicate struct {
	labels      labels.Selector
	expressions []expression
}

// compilePredicates parses the predicates' label selectors and compiles their expressions, once per
// decision.
func compilePredicates(predicates []clusterv1alpha1.ClusterPredicate) ([]compiledPredicate, error) {
	out := make([]compiledPredicate, len(predicates))
	for i := range predicates {
		sel := &predicates[i].RequiredClusterSelector
		s, err := metav1.LabelSelectorAsSelector(&sel.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf("spec.predicates[%d].requiredClusterSelector.labelSelector: %w", i, err)
		}
		expressions, err := compileExpressions(sel.CelSelector.CelExpressions, fmt.Sprintf("spec.predicates[%d].requiredClusterSelector.celSelector.celExpressions", i))
		if err != nil {
			return nil, err
		}
		out[i] = compiledPredicate{labels: s, expressions: expressions}
	}
	return out, nil
}

// matching is the index of the first predicate that selects the Cluster (0 when there are none), or -1
// with the first expression failure, if any, when none does.
func matching(predicates []compiledPredicate, c *clusterv1alpha1.Cluster) (int, string) {
	if len(predicates) == 0 {
		return 0, ""
	}
	var asCEL map[string]any
	failure := ""
	for i, p := range predicates {
		if !p.labels.Matches(labels.Set(c.Labels)) {
			continue
		}
		if len(p.expressions) == 0 {
			return i, ""
		}
		if asCEL == nil {
			var err error
			if asCEL, err = asMap(c); err != nil {
				return -1, err.Error()
			}
		}
		ok, why := evaluate(p.expressions, asCEL)
		if ok {
			return i, ""
		}
		if failure == "" {
			failure = why
		}
	}
	return -1, failure
}

// tolerates says whether every NoSchedule and NoExecute taint is tolerated at now (PreferNoSchedule never
// excludes), and until when (zero: without end). A toleration with
// tolerationSeconds tolerates a taint until its timeAdded plus those seconds (a taint without timeAdded has
// nothing to count from and is tolerated without end); of several that match, the longest counts.
func tolerates(taints []corev1.Taint, tolerations []corev1.Toleration, now time.Time) (bool, time.Time) {
	var until time.Time
	for i := range taints {
		t := &taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		matched, forever := false, false
		var latest time.Time
		for _, tol := range tolerations {
			if !tol.ToleratesTaint(klog.Background(), t, false) {
				continue
			}
			matched = true
			if tol.TolerationSeconds == nil || t.TimeAdded == nil {
				forever = true
				break
			}
			if end := t.TimeAdded.Add(time.Duration(*tol.TolerationSeconds) * time.Second); end.After(latest) {
				latest = end
			}
		}
		if !matched || (!forever && !now.Before(latest)) {
			return false, time.Time{}
		}
		if !forever && (until.IsZero() || latest.Before(until)) {
			until = latest
		}
	}
	return true, until
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
	n, err := groupSize(v, total)
	if err != nil {
		return 0, fmt.Errorf("spec.decisionStrategy.groupStrategy.clustersPerDecisionGroup: %w", err)
	}
	return n, nil
}

// groupSize is GroupSize with an error that names no field, for callers that name it themselves.
func groupSize(v *intstr.IntOrString, total int) (int, error) {
	if v == nil {
		return max(total, 1), nil
	}
	if v.Type == intstr.Int {
		if v.IntVal < 1 {
			return 0, fmt.Errorf("%d is not a group size: want at least 1", v.IntVal)
		}
		return int(v.IntVal), nil
	}
	digits, ok := strings.CutSuffix(v.StrVal, "%")
	pct, err := strconv.Atoi(digits)
	if !ok || err != nil || pct < 1 || pct > 100 {
		return 0, fmt.Errorf("%q is not a group size: want a count of at least 1 or a percentage from 1%% to 100%%, for example 25%%", v.StrVal)
	}
	return max(int(math.Ceil(float64(total)*float64(pct)/100)), 1), nil
}
