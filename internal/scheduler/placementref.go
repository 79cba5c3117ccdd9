package scheduler

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// A binding whose policy has a placementRef is placed on the clusters its Placement decided, Duplicated:
// the controller reads the Placement's PlacementDecisions for each pass and hands them in
// (Framework.Decided), as it does a namespace's grant, so the plugins read no API. The namespace's grant,
// the clusters' API lists, failover records and capacity still refuse a decided cluster, with their usual
// reasons. Taints are the Placement's: it applied its tolerations when it decided.

// Reasons of the Scheduled condition of a binding whose Placement gives nothing to place it on; the current
// placement stays.
const (
	ReasonPlacementNotFound = "PlacementNotFound"
	ReasonNoDecisions       = "NoDecisions"
)

// PluginPlacementDecisions is the filter that keeps a binding on its Placement's decisions.
const PluginPlacementDecisions = "PlacementDecisions"

// +kubebuilder:rbac:groups=cluster.flotilla.io,resources=placements;placementdecisions,verbs=get;list;watch

// PlacementDecisions keeps a binding on the clusters its Placement decided.
type PlacementDecisions struct {
	// Placement names the Placement.
	Placement string
	// Decided are the clusters it decided.
	Decided map[string]bool
	// Reason and Missing say why there is nothing to place the binding on (ReasonPlacementNotFound or
	// ReasonNoDecisions, and in words); empty when there are decisions.
	Reason, Missing string
}

func (PlacementDecisions) Name() string { return PluginPlacementDecisions }

func (p PlacementDecisions) Filter(_ *workv1alpha1.ResourceBindingSpec, c *clusterv1alpha1.Cluster) string {
	switch {
	case p.Decided[c.Name]:
		return ""
	case p.Missing != "":
		return "are not decided: " + p.Missing
	}
	return "are not decided by Placement " + p.Placement
}

// Decided is the framework for a binding that follows Placement decisions d: d's filter first, then the
// others but ClusterAffinity (the policy has no placement) and TaintToleration (the Placement's tolerations
// decided).
func (f *Framework) Decided(d PlacementDecisions) *Framework {
	decided := *f
	decided.Taints = TaintToleration{FailoverAfter: f.Taints.FailoverAfter, FollowsPlacement: true}
	decided.Filters = []FilterPlugin{d}
	for _, p := range f.Filters {
		switch p.(type) {
		case ClusterAffinity, TaintToleration:
		default:
			decided.Filters = append(decided.Filters, p)
		}
	}
	return &decided
}

// placementError: the binding's Placement gives nothing to place it on.
type placementError struct {
	reason string
	error
}

// placementDecisions reads what the Placement named by a binding's placementRef decided: the clusters of its
// PlacementDecisions (those it controls), or, when it does not exist or decided nothing, why. An error
// reading them is returned, never read as "no decision".
func (r *Controller[T]) placementDecisions(ctx context.Context, b T) (PlacementDecisions, error) {
	name := b.BindingSpec().PlacementRef.Name
	d := PlacementDecisions{Placement: name, Decided: map[string]bool{}}
	p := &clusterv1alpha1.Placement{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: b.GetNamespace(), Name: name}, p)
	switch {
	case b.GetNamespace() == "":
		d.Reason, d.Missing = ReasonPlacementNotFound, "a cluster-wide binding cannot follow a Placement"
		return d, nil
	case apierrors.IsNotFound(err):
		d.Reason, d.Missing = ReasonPlacementNotFound, fmt.Sprintf("Placement %s does not exist in namespace %s", name, b.GetNamespace())
		return d, nil
	case err != nil:
		return d, err
	}
	list := &clusterv1alpha1.PlacementDecisionList{}
	if err := r.Client.List(ctx, list, client.InNamespace(b.GetNamespace()), client.MatchingLabels{clusterv1alpha1.LabelPlacement: name}); err != nil {
		return d, err
	}
	for i := range list.Items {
		if metav1.IsControlledBy(&list.Items[i], p) {
			for _, c := range list.Items[i].Status.Decisions {
				d.Decided[c.ClusterName] = true
			}
		}
	}
	if len(d.Decided) == 0 {
		d.Reason, d.Missing = ReasonNoDecisions, fmt.Sprintf("Placement %s has decided no cluster", name)
	}
	return d, nil
}

// placementEvents enqueues the ResourceBindings that follow a Placement when it is created or deleted, or
// one of its PlacementDecisions is created, deleted or decides other clusters (a reason alone changes
// nothing placed). The Placement controller writes decisions only when they change, so nothing comes of
// a cluster's heartbeat.
func placementEvents(c client.Reader, placementOf func(client.Object) string) handler.Funcs {
	enqueueFollowers := func(ctx context.Context, q queue, o client.Object) {
		name := placementOf(o)
		if name == "" {
			return
		}
		bindings := &workv1alpha1.ResourceBindingList{}
		if err := c.List(ctx, bindings, client.InNamespace(o.GetNamespace())); err != nil {
			return // the cache lists without error once synced
		}
		for i := range bindings.Items {
			if ref := bindings.Items[i].Spec.PlacementRef; ref != nil && ref.Name == name {
				enqueue(q, &bindings.Items[i])
			}
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q queue) {
			if !e.IsInInitialList {
				enqueueFollowers(ctx, q, e.Object)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q queue) { enqueueFollowers(ctx, q, e.Object) },
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) {
			old, okOld := e.ObjectOld.(*clusterv1alpha1.PlacementDecision)
			updated, okNew := e.ObjectNew.(*clusterv1alpha1.PlacementDecision)
			if okOld && okNew && (!slices.Equal(decidedNames(old), decidedNames(updated)) ||
				old.Labels[clusterv1alpha1.LabelPlacement] != updated.Labels[clusterv1alpha1.LabelPlacement]) {
				enqueueFollowers(ctx, q, old)
				enqueueFollowers(ctx, q, updated)
			}
		},
	}
}

// decidedNames are the clusters a PlacementDecision holds, in its order.
func decidedNames(d *clusterv1alpha1.PlacementDecision) []string {
	names := make([]string, len(d.Status.Decisions))
	for i, c := range d.Status.Decisions {
		names[i] = c.ClusterName
	}
	return names
}

// placementName is a Placement's own name; decisionPlacement is the Placement a PlacementDecision belongs to.
func placementName(o client.Object) string     { return o.GetName() }
func decisionPlacement(o client.Object) string { return o.GetLabels()[clusterv1alpha1.LabelPlacement] }
