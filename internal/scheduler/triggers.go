package scheduler

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// bindingChanged passes the binding updates the scheduler has to look at: a spec change it did not make
// itself (the detector's policy-derived fields, a reschedule request) or a change of the kind of policy that
// placed it (placedByAdmin), a change of a cluster's health (or
// since when) when the binding fails over on application failures, and, while clusters are being left, a
// change of the Healthy condition that may finish their evictions. Its own writes (spec.clusters, eviction
// tasks, its status) and every other status change (applied, aggregated status) pass by.
var bindingChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	o, okOld := e.ObjectOld.(workv1alpha1.Binding)
	n, okNew := e.ObjectNew.(workv1alpha1.Binding)
	if !okOld || !okNew {
		return true
	}
	if (e.ObjectOld.GetDeletionTimestamp() == nil) != (e.ObjectNew.GetDeletionTimestamp() == nil) {
		return false // nothing to place on the way out
	}
	if !equality.Semantic.DeepEqual(notScheduled(o.BindingSpec()), notScheduled(n.BindingSpec())) || placedByAdmin(o) != placedByAdmin(n) {
		return true
	}
	if failover := n.BindingSpec().Failover; failover != nil && failover.Application != nil &&
		!equality.Semantic.DeepEqual(healthOf(o.BindingStatus()), healthOf(n.BindingStatus())) {
		return true // the application may have failed on a cluster, or recovered
	}
	if placedByCapacity(n.BindingSpec()) && !maps.Equal(unschedulableOf(o.BindingStatus()), unschedulableOf(n.BindingStatus())) {
		return true // replicas may have become unschedulable in a cluster, or found a node (deschedule.go)
	}
	if len(n.BindingSpec().GracefulEvictionTasks) == 0 {
		return false
	}
	oh := meta.FindStatusCondition(o.BindingStatus().Conditions, workv1alpha1.ConditionHealthy)
	nh := meta.FindStatusCondition(n.BindingStatus().Conditions, workv1alpha1.ConditionHealthy)
	return (oh == nil) != (nh == nil) || (nh != nil && (oh.Status != nh.Status || oh.ObservedGeneration != nh.ObservedGeneration))
}}

// notScheduled is a binding spec without the fields the scheduler writes.
func notScheduled(spec *workv1alpha1.ResourceBindingSpec) workv1alpha1.ResourceBindingSpec {
	s := *spec
	s.Clusters, s.GracefulEvictionTasks, s.FailoverRecords = nil, nil, nil
	return s
}

// healthOf is what application failover reads of a binding's aggregated status: each cluster's health and
// since when.
func healthOf(status *workv1alpha1.ResourceBindingStatus) map[string]string {
	out := map[string]string{}
	for _, item := range status.AggregatedStatus {
		since := ""
		if item.HealthTransitionTime != nil {
			since = item.HealthTransitionTime.UTC().Format(time.RFC3339)
		}
		out[item.ClusterName] = string(item.Health) + "@" + since
	}
	return out
}

// unschedulableOf is what descheduling reads of a binding's aggregated status: each cluster's unschedulable
// replicas and since when.
func unschedulableOf(status *workv1alpha1.ResourceBindingStatus) map[string]string {
	out := map[string]string{}
	for _, item := range status.AggregatedStatus {
		if u := item.Unschedulable; u != nil {
			out[item.ClusterName] = fmt.Sprintf("%d@%s", u.Replicas, u.Since.UTC().Format(time.RFC3339))
		}
	}
	return out
}

// clusterChange is what a Cluster update can change of the bindings' placements.
type clusterChange int

const (
	// noChange: heartbeats and facts no filter, score or division reads (lease and probe times, versions,
	// node counts, the Ready condition, whose loss the health monitor turns into taints).
	noChange clusterChange = iota
	// capacityChange: only the room for more replicas; it matters to placements divided by capacity.
	capacityChange
	// placementChange: what the filters and scores read: labels, taints, location, served APIs, deletion.
	placementChange
)

// changeOf classifies a Cluster update. (Every Cluster change used to reschedule every binding: with 1,000
// clusters each reporting its status, the scheduler ran all the time for nothing.)
func changeOf(old, updated *clusterv1alpha1.Cluster) clusterChange {
	apisComplete := func(c *clusterv1alpha1.Cluster) bool {
		return meta.IsStatusConditionTrue(c.Status.Conditions, clusterv1alpha1.ClusterConditionAPIsComplete)
	}
	switch {
	case !maps.Equal(old.Labels, updated.Labels),
		(old.DeletionTimestamp == nil) != (updated.DeletionTimestamp == nil),
		!equality.Semantic.DeepEqual(old.Spec.Taints, updated.Spec.Taints),
		old.Spec.Provider != updated.Spec.Provider, old.Spec.Region != updated.Spec.Region,
		!slices.Equal(old.Spec.Zones, updated.Spec.Zones),
		!equality.Semantic.DeepEqual(old.Status.APIEnablements, updated.Status.APIEnablements),
		apisComplete(old) != apisComplete(updated):
		return placementChange
	case !equality.Semantic.DeepEqual(old.Status.ResourceSummary, updated.Status.ResourceSummary):
		return capacityChange
	}
	return noChange
}

// placedByCapacity reports whether a binding's placement depends on the clusters' room: replicas divided by
// dynamic weight or aggregated into the clusters with room.
func placedByCapacity(spec *workv1alpha1.ResourceBindingSpec) bool {
	if spec.Placement == nil || spec.Replicas == 0 {
		return false
	}
	rs := spec.Placement.ReplicaScheduling
	return rs != nil && rs.ReplicaSchedulingType == policyv1alpha1.ReplicaSchedulingDivided &&
		(rs.ReplicaDivisionPreference == policyv1alpha1.ReplicaDivisionAggregated ||
			(rs.WeightPreference != nil && rs.WeightPreference.DynamicWeight == policyv1alpha1.DynamicWeightByAvailableReplicas))
}

// roomChanged reports whether a capacity change of a cluster changes how many more replicas of the binding
// it can take: a few hundred millicores more or less do not matter to replicas that request whole CPUs.
func roomChanged(spec *workv1alpha1.ResourceBindingSpec, old, updated *clusterv1alpha1.Cluster) bool {
	return placedByCapacity(spec) && availableReplicas(spec, old) != availableReplicas(spec, updated)
}

// clusterEvents enqueues the bindings a Cluster event can move: every binding when a cluster joins, leaves
// or changes what placements read; when only its room changed, those placed by capacity whose room there
// changed; none on a heartbeat. Each at its priority.
func clusterEvents(c client.Reader, list func() client.ObjectList) handler.Funcs {
	enqueueAll := func(ctx context.Context, q queue, moves func(spec *workv1alpha1.ResourceBindingSpec) bool) {
		l := list()
		if err := c.List(ctx, l); err != nil {
			return
		}
		items, _ := meta.ExtractList(l)
		for _, item := range items {
			b, ok := item.(workv1alpha1.Binding)
			if ok && (moves == nil || moves(b.BindingSpec())) {
				enqueue(q, b)
			}
		}
	}
	return handler.Funcs{
		// The clusters listed when the hub starts bring nothing back: every binding is listed then too.
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q queue) {
			if !e.IsInInitialList {
				enqueueAll(ctx, q, nil)
			}
		},
		DeleteFunc: func(ctx context.Context, _ event.DeleteEvent, q queue) { enqueueAll(ctx, q, nil) },
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) {
			old, okOld := e.ObjectOld.(*clusterv1alpha1.Cluster)
			updated, okNew := e.ObjectNew.(*clusterv1alpha1.Cluster)
			if !okOld || !okNew {
				return
			}
			switch changeOf(old, updated) {
			case placementChange:
				enqueueAll(ctx, q, nil)
			case capacityChange:
				enqueueAll(ctx, q, func(spec *workv1alpha1.ResourceBindingSpec) bool { return roomChanged(spec, old, updated) })
			}
		},
	}
}
