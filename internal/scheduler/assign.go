package scheduler

import (
	"cmp"
	"math"
	"slices"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/selection"
)

// assignReplicas gives each feasible cluster its replicas. Duplicated (the default when replicaScheduling
// is omitted, and for kinds without replicas): every cluster runs them all. Divided: the replicas are shared
// by static weight (equal weights when none are given; a cluster no weight entry selects gets none, unless
// no entry selects any feasible cluster, when all share equally), by dynamic weight (each cluster's room
// for more replicas), or Aggregated into the fewest clusters with room. The note, when not empty, says
// how the result departs from what the policy asked.
func assignReplicas(b *workv1alpha1.ResourceBindingSpec, feasible []*clusterv1alpha1.Cluster, room *rooms) (targets []workv1alpha1.TargetCluster, note string) {
	rs := (*policyv1alpha1.ReplicaSchedulingStrategy)(nil)
	if b.Placement != nil {
		rs = b.Placement.ReplicaScheduling
	}
	if rs == nil || rs.ReplicaSchedulingType != policyv1alpha1.ReplicaSchedulingDivided || b.Replicas == 0 {
		out := make([]workv1alpha1.TargetCluster, len(feasible))
		for i, c := range feasible {
			out[i] = workv1alpha1.TargetCluster{Name: c.Name, Replicas: b.Replicas}
		}
		return sortedByName(out), ""
	}
	aggregated := rs.ReplicaDivisionPreference == policyv1alpha1.ReplicaDivisionAggregated
	dynamic := rs.WeightPreference != nil && rs.WeightPreference.DynamicWeight == policyv1alpha1.DynamicWeightByAvailableReplicas
	if (aggregated || dynamic) && len(b.Clusters) > 0 && placedReplicas(b.Clusters) <= math.MaxInt32 {
		// Capacity changes all the time, not least because of this binding's own pods: a placement by
		// capacity is not divided anew each time, only adjusted. Not one whose replicas add up past a replica
		// count (a Duplicated one of a large count, which runs the count on every cluster): adjust counts
		// them in an int32.
		return sortedByName(adjust(b, feasible, aggregated, room)), ""
	}
	weights := make([]int64, len(feasible))
	switch {
	case aggregated:
		feasible, weights = aggregate(feasible, room)
	case dynamic:
		var total int64
		for i, c := range feasible {
			weights[i] = room.of(c)
			total += weights[i]
		}
		if total == 0 { // no room reported anywhere: share equally rather than not at all
			for i := range weights {
				weights[i] = 1
			}
		}
	default:
		for i, c := range feasible {
			weights[i] = staticWeight(rs.WeightPreference, c)
		}
		if !slices.ContainsFunc(weights, func(w int64) bool { return w > 0 }) {
			// Weights keyed by a label that was renamed, or by clusters that left, would place the replicas
			// nowhere and so delete every copy: share them among the clusters the placement allows instead.
			for i := range weights {
				weights[i] = 1
			}
			note = "no staticWeightList entry selects a feasible cluster, so the replicas are divided equally"
		}
	}
	return sortedByName(divide(b.Replicas, feasible, weights, b.Clusters)), note
}

// staticWeight is the weight of the first static entry that selects the cluster; 1 for every cluster when
// there is no static list.
func staticWeight(p *policyv1alpha1.ClusterPreferences, c *clusterv1alpha1.Cluster) int64 {
	if p == nil || len(p.StaticWeightList) == 0 {
		return 1
	}
	for _, w := range p.StaticWeightList {
		if selection.Cluster(&w.TargetCluster, c) {
			return w.Weight
		}
	}
	return 0
}

// placedReplicas is the sum of a placement's replicas, which can pass an int32.
func placedReplicas(clusters []workv1alpha1.TargetCluster) int64 {
	var sum int64
	for _, t := range clusters {
		sum += int64(t.Replicas)
	}
	return sum
}

// divide shares replicas in proportion to weights: each cluster gets the floor of its share, and the
// remainder goes one by one to the largest fractional parts, ties to clusters that already run more replicas
// of this binding, then by name. Clusters left with no replicas are dropped. The weights are bounded first
// (boundedWeights), so that replicas×weight stays below 2^62 and the total of the weights within an int64.
func divide(replicas int32, clusters []*clusterv1alpha1.Cluster, weights []int64, current []workv1alpha1.TargetCluster) []workv1alpha1.TargetCluster {
	weights = boundedWeights(weights)
	var total int64
	for _, w := range weights {
		total += w
	}
	if total == 0 {
		return nil
	}
	type share struct {
		name      string
		replicas  int32
		remainder int64
		current   int32
	}
	shares := make([]share, len(clusters))
	var given int32
	for i, c := range clusters {
		exact := int64(replicas) * weights[i]
		shares[i] = share{name: c.Name, replicas: int32(exact / total), remainder: exact % total}
		if j := slices.IndexFunc(current, func(t workv1alpha1.TargetCluster) bool { return t.Name == c.Name }); j >= 0 {
			shares[i].current = current[j].Replicas
		}
		given += shares[i].replicas
	}
	order := make([]int, len(shares))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(shares[b].remainder, shares[a].remainder), cmp.Compare(shares[b].current, shares[a].current),
			cmp.Compare(shares[a].name, shares[b].name))
	})
	for i := 0; given < replicas; i++ {
		if weights[order[i%len(order)]] > 0 {
			shares[order[i%len(order)]].replicas++
			given++
		}
	}
	var out []workv1alpha1.TargetCluster
	for _, s := range shares {
		if s.replicas > 0 {
			out = append(out, workv1alpha1.TargetCluster{Name: s.name, Replicas: s.replicas})
		}
	}
	return out
}

// boundedWeights returns weights none of which is negative or over policyv1alpha1.MaxStaticWeight. Admission
// bounds static weights so, and availableReplicas dynamic ones; a policy stored before admission bounded them
// may hold larger ones, and then every weight is divided by the same factor, which keeps their proportions.
func boundedWeights(weights []int64) []int64 {
	largest := int64(0)
	for _, w := range weights {
		largest = max(largest, w)
	}
	if largest <= policyv1alpha1.MaxStaticWeight && !slices.ContainsFunc(weights, func(w int64) bool { return w < 0 }) {
		return weights
	}
	scale := largest/policyv1alpha1.MaxStaticWeight + 1
	out := make([]int64, len(weights))
	for i, w := range weights {
		out[i] = max(w, 0) / scale
	}
	return out
}

// adjust keeps a placement by capacity where it is, on the clusters that are still feasible, and moves only
// what must move: the replicas of clusters no longer feasible and those a scale adds go where there is room
// (Aggregated: the clusters already used first, most room first; dynamic weights: in proportion to room),
// and those a scale removes come off each cluster in proportion to what it runs.
func adjust(b *workv1alpha1.ResourceBindingSpec, feasible []*clusterv1alpha1.Cluster, aggregated bool, room *rooms) []workv1alpha1.TargetCluster {
	byName := map[string]*clusterv1alpha1.Cluster{}
	for _, c := range feasible {
		byName[c.Name] = c
	}
	kept := map[string]int32{}
	var keptClusters []*clusterv1alpha1.Cluster
	var keptWeights []int64
	var sum int32
	for _, t := range b.Clusters {
		if c := byName[t.Name]; c != nil && t.Replicas > 0 {
			kept[t.Name] = t.Replicas
			keptClusters, keptWeights = append(keptClusters, c), append(keptWeights, int64(t.Replicas))
			sum += t.Replicas
		}
	}
	switch {
	case sum > b.Replicas:
		for _, t := range divide(sum-b.Replicas, keptClusters, keptWeights, nil) {
			kept[t.Name] -= t.Replicas
		}
	case sum < b.Replicas && aggregated:
		fill(feasible, kept, b.Replicas-sum, room)
	case sum < b.Replicas:
		weights := make([]int64, len(feasible))
		var total int64
		for i, c := range feasible {
			weights[i] = room.of(c)
			total += weights[i]
		}
		if total == 0 {
			for i := range weights {
				weights[i] = 1
			}
		}
		for _, t := range divide(b.Replicas-sum, feasible, weights, b.Clusters) {
			kept[t.Name] += t.Replicas
		}
	}
	var out []workv1alpha1.TargetCluster
	for name, n := range kept {
		if n > 0 {
			out = append(out, workv1alpha1.TargetCluster{Name: name, Replicas: n})
		}
	}
	return out
}

// fill places n more replicas as Aggregated does: into the clusters already used, then the others, each in
// order of most room; what no cluster has room for goes to the first of them.
func fill(feasible []*clusterv1alpha1.Cluster, placed map[string]int32, n int32, room *rooms) {
	var used, unused []*clusterv1alpha1.Cluster
	for _, c := range feasible {
		if _, ok := placed[c.Name]; ok {
			used = append(used, c)
		} else {
			unused = append(unused, c)
		}
	}
	mostRoomFirst := func(x, y *clusterv1alpha1.Cluster) int {
		return cmp.Compare(room.of(y), room.of(x))
	}
	slices.SortStableFunc(used, mostRoomFirst)
	slices.SortStableFunc(unused, mostRoomFirst)
	order := append(used, unused...)
	for _, c := range order {
		take := int32(min(int64(n), room.of(c)))
		if take > 0 {
			placed[c.Name] += take
			n -= take
		}
	}
	if n > 0 && len(order) > 0 {
		placed[order[0].Name] += n
	}
}

func sortedByName(t []workv1alpha1.TargetCluster) []workv1alpha1.TargetCluster {
	slices.SortFunc(t, func(a, b workv1alpha1.TargetCluster) int { return cmp.Compare(a.Name, b.Name) })
	return t
}
