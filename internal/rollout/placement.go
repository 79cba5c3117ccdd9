package rollout

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// Placed is what one Placement decides, read for a rollout: its clusters by decision group, and whether that
// is its whole current decision.
type Placed struct {
	// Groups are the decided clusters, by decision group (groups in order, clusters by name).
	Groups []Group
	// Settled is true when the decisions read are the Placement's whole current decision: the Placement exists,
	// was evaluated at its generation, is valid, and the PlacementDecisions read hold as many clusters as its
	// status counts. Only then does a cluster missing from them count as no longer placed.
	Settled bool
	// Why says what keeps the decision from being settled.
	Why string
}

// Decides says whether the placement decides on a cluster.
func (p *Placed) Decides(cluster string) bool {
	for _, g := range p.Groups {
		if slices.Contains(g.Clusters, cluster) {
			return true
		}
	}
	return false
}

// Clusters are the decided clusters, in rollout order.
func (p *Placed) Clusters() []string {
	var out []string
	for _, g := range p.Groups {
		out = append(out, g.Clusters...)
	}
	return out
}

// ReadPlacement reads the cluster.flotilla.io PlacementDecisions of the Placement namespace/name (the
// Placement's own, by controller reference). A Placement that does not exist is not an error: it decides
// nothing and is not settled. Any other read error is returned, never taken for an empty decision.
func ReadPlacement(ctx context.Context, c client.Reader, namespace, name string) (*Placed, error) {
	out := &Placed{}
	pl := &clusterv1alpha1.Placement{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pl); err != nil {
		if client.IgnoreNotFound(err) != nil {
			return nil, err
		}
		out.Why = fmt.Sprintf("Placement %s/%s does not exist", namespace, name)
		return out, nil
	}
	decisions := &clusterv1alpha1.PlacementDecisionList{}
	if err := c.List(ctx, decisions, client.InNamespace(namespace), client.MatchingLabels{clusterv1alpha1.LabelPlacement: name}); err != nil {
		return nil, err
	}
	type group struct {
		index int
		name  string
	}
	byGroup := map[group][]string{}
	count := 0
	for i := range decisions.Items {
		d := &decisions.Items[i]
		if !metav1.IsControlledBy(d, pl) {
			continue
		}
		index, _ := strconv.Atoi(d.Labels[clusterv1alpha1.LabelDecisionGroupIndex])
		g := group{index: index, name: d.Labels[clusterv1alpha1.LabelDecisionGroupName]}
		for _, c := range d.Status.Decisions {
			byGroup[g] = append(byGroup[g], c.ClusterName)
			count++
		}
	}
	keys := make([]group, 0, len(byGroup))
	for g := range byGroup {
		keys = append(keys, g)
	}
	slices.SortFunc(keys, func(a, b group) int { return a.index - b.index })
	for _, g := range keys {
		name := g.name
		if name == "" {
			name = strconv.Itoa(g.index)
		}
		clusters := slices.Clone(byGroup[g])
		slices.Sort(clusters)
		out.Groups = append(out.Groups, Group{Name: name, Clusters: clusters})
	}
	valid := meta.FindStatusCondition(pl.Status.Conditions, clusterv1alpha1.PlacementConditionMisconfigured)
	switch {
	case valid == nil || valid.ObservedGeneration != pl.Generation:
		out.Why = fmt.Sprintf("Placement %s/%s has not decided yet", namespace, name)
	case valid.Status != metav1.ConditionFalse:
		out.Why = fmt.Sprintf("Placement %s/%s is misconfigured: %s", namespace, name, valid.Message)
	case int32(count) != pl.Status.NumberOfSelectedClusters:
		out.Why = fmt.Sprintf("Placement %s/%s decided %d clusters, %d read so far", namespace, name, pl.Status.NumberOfSelectedClusters, count)
	default:
		out.Settled = true
	}
	return out, nil
}
