package scheduler

import (
	"cmp"
	"slices"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// Plugins of the verdicts that are not filters: what leaves a feasible cluster out after filtering.
const (
	PluginClusterRemoval    = "ClusterRemoval"
	PluginSpreadConstraints = "SpreadConstraints"
	PluginReplicaScheduling = "ReplicaScheduling"
	PluginCapacity          = "Capacity"
	// PluginClusterSetGrant is a filter's (ClusterSetGrant), named here with the others a person reads in
	// flotilla explain.
	PluginClusterSetGrant = "ClusterSetGrant"
)

// filterVerdicts runs every filter on a cluster, not only up to the first refusal, so that "why not here?"
// lists everything a person would have to change to place the binding there.
func (f *Framework) filterVerdicts(b *workv1alpha1.ResourceBindingSpec, c *clusterv1alpha1.Cluster) []workv1alpha1.ClusterVerdict {
	if c.DeletionTimestamp != nil {
		return []workv1alpha1.ClusterVerdict{{Cluster: c.Name, Plugin: PluginClusterRemoval, Reason: "being removed"}}
	}
	var out []workv1alpha1.ClusterVerdict
	for _, p := range f.Filters {
		if reason := p.Filter(b, c); reason != "" {
			out = append(out, workv1alpha1.ClusterVerdict{Cluster: c.Name, Plugin: p.Name(), Reason: reason})
		}
	}
	return out
}

// leftOut gives every cluster of candidates not in kept the same verdict.
func leftOut(candidates, kept []*clusterv1alpha1.Cluster, plugin, reason string) []workv1alpha1.ClusterVerdict {
	keep := make(map[*clusterv1alpha1.Cluster]bool, len(kept))
	for _, c := range kept {
		keep[c] = true
	}
	var out []workv1alpha1.ClusterVerdict
	for _, c := range candidates {
		if !keep[c] {
			out = append(out, workv1alpha1.ClusterVerdict{Cluster: c.Name, Plugin: plugin, Reason: reason})
		}
	}
	return out
}

// divisionVerdicts explains the clusters that passed the filters and the spread constraints but got no
// replicas: by capacity when the division follows room and the cluster has none, else the division itself.
func divisionVerdicts(b *workv1alpha1.ResourceBindingSpec, picked []*clusterv1alpha1.Cluster, targets []workv1alpha1.TargetCluster, room *rooms) []workv1alpha1.ClusterVerdict {
	var out []workv1alpha1.ClusterVerdict
	byRoom := false
	if b.Placement != nil && b.Placement.ReplicaScheduling != nil {
		rs := b.Placement.ReplicaScheduling
		byRoom = rs.ReplicaDivisionPreference == policyv1alpha1.ReplicaDivisionAggregated ||
			(rs.WeightPreference != nil && rs.WeightPreference.DynamicWeight == policyv1alpha1.DynamicWeightByAvailableReplicas)
	}
	placed := make(map[string]bool, len(targets))
	for _, t := range targets {
		placed[t.Name] = true
	}
	for _, c := range picked {
		if placed[c.Name] {
			continue
		}
		switch {
		case byRoom && c.Status.ResourceSummary != nil && room.of(c) == 0:
			out = append(out, workv1alpha1.ClusterVerdict{Cluster: c.Name, Plugin: PluginCapacity, Reason: "have room for no replica"})
		case byRoom:
			out = append(out, workv1alpha1.ClusterVerdict{Cluster: c.Name, Plugin: PluginReplicaScheduling,
				Reason: "got no replica: clusters with more room hold them all"})
		default:
			out = append(out, workv1alpha1.ClusterVerdict{Cluster: c.Name, Plugin: PluginReplicaScheduling,
				Reason: "got no replica from the static weights"})
		}
	}
	return out
}

// BoundVerdicts sorts verdicts by cluster and plugin and keeps at most MaxClusterVerdicts; it returns how many
// it left out. When they do not all fit, the clusters refused for the fewest reasons are kept: a near miss
// (one filter between a cluster and the placement) says more than a cluster every filter refused.
func BoundVerdicts(verdicts []workv1alpha1.ClusterVerdict) ([]workv1alpha1.ClusterVerdict, int32) {
	byCluster := func(a, b workv1alpha1.ClusterVerdict) int {
		return cmp.Or(cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.Plugin, b.Plugin))
	}
	out := slices.Clone(verdicts)
	if len(out) <= workv1alpha1.MaxClusterVerdicts {
		slices.SortStableFunc(out, byCluster)
		return out, 0
	}
	reasons := map[string]int{}
	for _, v := range out {
		reasons[v.Cluster]++
	}
	slices.SortStableFunc(out, func(a, b workv1alpha1.ClusterVerdict) int {
		return cmp.Or(cmp.Compare(reasons[a.Cluster], reasons[b.Cluster]), byCluster(a, b))
	})
	kept := out[:workv1alpha1.MaxClusterVerdicts]
	slices.SortStableFunc(kept, byCluster)
	return kept, int32(len(out) - workv1alpha1.MaxClusterVerdicts)
}
