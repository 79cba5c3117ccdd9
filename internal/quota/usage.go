// Package quota enforces FederatedResourceQuotas, a namespace's fleet-wide cap: the arithmetic of what the
// namespace's templates ask of the fleet (usage.go), which the hub's admission refuses a template write by
// (internal/admission) and the quota's status reports (status.go), and the controller that keeps each static
// assignment as a ResourceQuota in its member through a Work (controller.go, works.go).
//
// What counts: a template's demand is its replicas times what one replica requests, as its binding records
// them (spec.replicas, spec.replicaRequirements), once per copy: a Duplicated template placed on three
// clusters runs three times its replicas. A quota's resource is counted by its plain name or requests.<name>
// (cpu, requests.memory, nvidia.com/gpu) and pods (the replicas); limits and object counts are not Flotilla's
// to count across the fleet, and are left to the member ResourceQuotas of the static assignments.
package quota

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// Demand is what a workload asks of the fleet: each of one replica's requests times replicas, and pods the
// replicas.
func Demand(replicas int32, perReplica corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(int64(replicas), resource.DecimalSI)}
	for name, q := range perReplica {
		if name == corev1.ResourcePods {
			continue
		}
		total := q.DeepCopy()
		// Beyond int64 the product is kept as a decimal, still exact: Mul's result says only which.
		_ = total.Mul(int64(replicas))
		out[name] = total
	}
	return out
}

// Copies is how many times a placed binding's replicas run: once per target cluster when Duplicated (the
// default without replicaScheduling), once in all when Divided. A binding placed nowhere yet counts once:
// it is about to run somewhere.
func Copies(spec *workv1alpha1.ResourceBindingSpec) int32 {
	divided := spec.Placement != nil && spec.Placement.ReplicaScheduling != nil &&
		spec.Placement.ReplicaScheduling.ReplicaSchedulingType == policyv1alpha1.ReplicaSchedulingDivided
	if divided || len(spec.Clusters) == 0 {
		return 1
	}
	return int32(len(spec.Clusters))
}

// BindingDemand is what a binding's template asks of the fleet, every copy counted.
func BindingDemand(spec *workv1alpha1.ResourceBindingSpec) corev1.ResourceList {
	var perReplica corev1.ResourceList
	if spec.ReplicaRequirements != nil {
		perReplica = spec.ReplicaRequirements.ResourceRequest
	}
	return Demand(spec.Replicas*Copies(spec), perReplica)
}

// Counted returns a demand's amount of a quota's resource name, and false for names Flotilla does not count
// across the fleet (limits.*, count/*, storage classes).
func Counted(demand corev1.ResourceList, name corev1.ResourceName) (resource.Quantity, bool) {
	n := string(name)
	if strings.HasPrefix(n, "limits.") || strings.HasPrefix(n, "count/") || strings.Contains(n, ".storageclass.storage.k8s.io/") ||
		name == corev1.ResourceRequestsStorage || name == corev1.ResourcePersistentVolumeClaims {
		return resource.Quantity{}, false
	}
	n = strings.TrimPrefix(n, "requests.")
	return demand[corev1.ResourceName(n)], true
}

// Add returns the sum of lists.
func Add(lists ...corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, l := range lists {
		for name, q := range l {
			sum := out[name]
			sum.Add(q)
			out[name] = sum
		}
	}
	return out
}

// Used is demand as a quota reads it: the amount of each of overall's counted names.
func Used(overall, demand corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name := range overall {
		if q, ok := Counted(demand, name); ok {
			out[name] = q
		}
	}
	return out
}

// Excess is one resource a change would take over its quota.
type Excess struct {
	Name corev1.ResourceName
	// Requested is what the changed template asks; Used what the namespace's other templates do.
	Requested, Used, Overall resource.Quantity
}

// Exceeds returns the resources of overall that a template's change from demand before to demand after takes
// over the cap, the namespace's other templates using others. A change that asks no more of a resource than
// before passes whatever the usage: lowering replicas, or changing a label, is never refused, even in a
// namespace already over its quota (the quota was lowered, or a template was placed without admission).
func Exceeds(overall, others, before, after corev1.ResourceList) []Excess {
	var out []Excess
	for name, limit := range overall {
		was, counted := Counted(before, name)
		now, _ := Counted(after, name)
		if !counted || now.Cmp(was) <= 0 {
			continue
		}
		used, _ := Counted(others, name)
		total := used.DeepCopy()
		total.Add(now)
		if total.Cmp(limit) > 0 {
			out = append(out, Excess{Name: name, Requested: now, Used: used, Overall: limit})
		}
	}
	slices.SortFunc(out, func(a, b Excess) int { return strings.Compare(string(a.Name), string(b.Name)) })
	return out
}

// Left is what the other templates leave of the cap, never below zero.
func (e Excess) Left() resource.Quantity {
	left := e.Overall.DeepCopy()
	left.Sub(e.Used)
	if left.Sign() < 0 {
		return *resource.NewQuantity(0, e.Overall.Format)
	}
	return left
}

// String reads "cpu: requested 3, used 0, overall 2 (2 left)".
func (e Excess) String() string {
	left := e.Left()
	return fmt.Sprintf("%s: requested %s, used %s, overall %s (%s left)", e.Name, e.Requested.String(), e.Used.String(), e.Overall.String(), left.String())
}

// sortedNames are a list's resource names in order, for messages that read the same every time.
func sortedNames(l corev1.ResourceList) []corev1.ResourceName {
	names := slices.Collect(maps.Keys(l))
	slices.Sort(names)
	return names
}
