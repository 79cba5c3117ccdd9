package scheduler

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// availableReplicas is how many more replicas of a binding a cluster can take: the fewer of what its resource
// models let its nodes take one by one (modelReplicas) and what its summed capacity allows, the least, over
// pods and every requested resource, of (allocatable − allocated − allocating) ÷ request (pods not yet bound
// hold room the models do not see). It is at most math.MaxInt32, a replica count, whatever a member reports:
// as a dynamic weight it keeps divide's arithmetic within an int64 (see policyv1alpha1.MaxStaticWeight).
func availableReplicas(b *workv1alpha1.ResourceBindingSpec, c *clusterv1alpha1.Cluster) int64 {
	rs := c.Status.ResourceSummary
	if rs == nil {
		return 0
	}
	available := int64(math.MaxInt32)
	if n, ok := modelReplicas(b, c); ok {
		available = n
	}
	return min(available, summedReplicas(b, rs))
}

// summedReplicas is how many replicas a cluster's summed free capacity allows.
func summedReplicas(b *workv1alpha1.ResourceBindingSpec, rs *clusterv1alpha1.ResourceSummary) int64 {
	free := func(name corev1.ResourceName) resource.Quantity {
		q := rs.Allocatable[name].DeepCopy()
		q.Sub(rs.Allocated[name])
		q.Sub(rs.Allocating[name])
		return q
	}
	available := int64(math.MaxInt32)
	if _, ok := rs.Allocatable[corev1.ResourcePods]; ok {
		available = fitting(free(corev1.ResourcePods), *resource.NewQuantity(1, resource.DecimalSI))
	}
	if b.ReplicaRequirements != nil {
		for name, request := range b.ReplicaRequirements.ResourceRequest {
			if request.IsZero() {
				continue
			}
			available = min(available, fitting(free(name), request))
		}
	}
	return available
}

// fitting is how many requests fit in free, from 0 to math.MaxInt32. Counted in thousandths (CPU is asked
// for in millicores) where both quantities allow it; Quantity.MilliValue overflows an int64 past 9.2*10^15
// units (and gives a negative or wrapped count), so a larger quantity, which only a member reporting
// nonsense or a request asking for it has, is counted exactly by bisection.
func fitting(free, request resource.Quantity) int64 {
	if free.Sign() <= 0 || request.Sign() <= 0 {
		return 0
	}
	const milliSafe = math.MaxInt64 / 1000
	if free.CmpInt64(milliSafe) < 0 && request.CmpInt64(milliSafe) < 0 {
		return min(free.MilliValue()/request.MilliValue(), math.MaxInt32)
	}
	times := func(n int64) resource.Quantity {
		q := request.DeepCopy()
		q.Mul(n) // exact: past an int64, Quantity multiplies as a decimal
		return q
	}
	if q := times(math.MaxInt32); q.Cmp(free) <= 0 {
		return math.MaxInt32
	}
	lo, hi := int64(0), int64(math.MaxInt32) // request×lo ≤ free < request×hi
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if q := times(mid); q.Cmp(free) <= 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// aggregate keeps the fewest clusters (most room first, then rank) whose room fits the replicas, and weighs
// them by that room. When even every cluster together lacks the room, all are kept.
func aggregate(feasible []*clusterv1alpha1.Cluster, room *rooms) ([]*clusterv1alpha1.Cluster, []int64) {
	type roomOf struct {
		c     *clusterv1alpha1.Cluster
		n     int64
		index int
	}
	byRoom := make([]roomOf, len(feasible))
	for i, c := range feasible {
		byRoom[i] = roomOf{c, room.of(c), i}
	}
	slices.SortFunc(byRoom, func(a, c roomOf) int { return cmp.Or(cmp.Compare(c.n, a.n), cmp.Compare(a.index, c.index)) })
	var chosen []*clusterv1alpha1.Cluster
	var weights []int64
	var total int64
	for _, r := range byRoom {
		if total >= int64(room.b.Replicas) {
			break
		}
		chosen, weights = append(chosen, r.c), append(weights, r.n)
		total += r.n
	}
	if total == 0 {
		for i := range weights {
			weights[i] = 1
		}
	}
	return chosen, weights
}

// fitsCapacity refuses, as Karmada does, a placement Divided by capacity (dynamic weights or Aggregated) when
// the chosen clusters together lack room for all the replicas, saying how many are short; the caller keeps
// the current placement. The replicas the binding already runs on a cluster count as room there (its summary
// counts them as allocated). When a cluster reports no resource summary its room is unknown, and the replicas
// are divided as before (equally when no cluster reports room).
func fitsCapacity(b *workv1alpha1.ResourceBindingSpec, feasible []*clusterv1alpha1.Cluster, running []workv1alpha1.TargetCluster, room *rooms) error {
	rs := (*policyv1alpha1.ReplicaSchedulingStrategy)(nil)
	if b.Placement != nil {
		rs = b.Placement.ReplicaScheduling
	}
	if rs == nil || rs.ReplicaSchedulingType != policyv1alpha1.ReplicaSchedulingDivided || b.Replicas == 0 {
		return nil
	}
	dynamic := rs.WeightPreference != nil && rs.WeightPreference.DynamicWeight == policyv1alpha1.DynamicWeightByAvailableReplicas
	if rs.ReplicaDivisionPreference != policyv1alpha1.ReplicaDivisionAggregated && !dynamic {
		return nil
	}
	var total int64
	for _, c := range feasible {
		if c.Status.ResourceSummary == nil {
			return nil
		}
		total += room.of(c)
		if i := slices.IndexFunc(running, func(t workv1alpha1.TargetCluster) bool { return t.Name == c.Name }); i >= 0 {
			total += int64(running[i].Replicas)
		}
	}
	if short := int64(b.Replicas) - total; short > 0 {
		return fmt.Errorf("%d replicas divided by capacity do not fit: the %d feasible clusters have room for %d (%d short)",
			b.Replicas, len(feasible), total, short)
	}
	return nil
}

// rooms holds each cluster's room for one binding (availableReplicas) through one scheduling pass, so that
// ranking, division and the capacity check estimate a cluster once, not once per comparison.
type rooms struct {
	b    *workv1alpha1.ResourceBindingSpec
	full map[string]int32
	memo map[*clusterv1alpha1.Cluster]int64
}

// newRooms estimates the clusters' room for b; the clusters in full have none.
func newRooms(b *workv1alpha1.ResourceBindingSpec, full map[string]int32) *rooms {
	return &rooms{b: b, full: full, memo: map[*clusterv1alpha1.Cluster]int64{}}
}

// of is the cluster's room for the binding.
func (r *rooms) of(c *clusterv1alpha1.Cluster) int64 {
	if _, full := r.full[c.Name]; full {
		return 0
	}
	n, ok := r.memo[c]
	if !ok {
		n = availableReplicas(r.b, c)
		r.memo[c] = n
	}
	return n
}
