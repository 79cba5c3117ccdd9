package clusterset

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

// setStatusManager owns a ClusterSet's status.
var setStatusManager = workv1alpha1.ControllerFieldManager("clusterset-status")

// membershipChanged passes the Cluster events that can move a Cluster into or out of a set: its creation,
// deletion and a change of its labels; not its status, which agents and the health monitor write every few
// seconds.
var membershipChanged = predicate.LabelChangedPredicate{}

// +kubebuilder:rbac:groups=cluster.flotilla.io,resources=clustersets,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.flotilla.io,resources=clustersets/status,verbs=patch
// +kubebuilder:rbac:groups=cluster.flotilla.io,resources=clusters,verbs=get;list;watch

// SetStatus counts each ClusterSet's Clusters into its status (clusterCount, ClusterSetEmpty), and writes
// only when that changed.
type SetStatus struct {
	Client client.Client
}

// SetupSetStatus registers the controller: a set is looked at when its spec changes, and every set when a
// Cluster appears, goes or is relabelled (sets are few; a Cluster's heartbeat wakes none of them).
func SetupSetStatus(mgr ctrl.Manager) error {
	r := &SetStatus{Client: mgr.GetClient()}
	everySet := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		sets := &clusterv1alpha1.ClusterSetList{}
		if err := r.Client.List(ctx, sets); err != nil {
			return nil // the cache lists without error once synced
		}
		requests := make([]reconcile.Request, len(sets.Items))
		for i := range sets.Items {
			requests[i] = reconcile.Request{NamespacedName: client.ObjectKey{Name: sets.Items[i].Name}}
		}
		return requests
	})
	return ctrl.NewControllerManagedBy(mgr).Named("clusterset-status").
		For(&clusterv1alpha1.ClusterSet{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&clusterv1alpha1.Cluster{}, everySet, builder.WithPredicates(membershipChanged)).
		Complete(r)
}

// Reconcile applies one set's count and ClusterSetEmpty condition when they changed.
func (r *SetStatus) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	set := &clusterv1alpha1.ClusterSet{}
	if err := r.Client.Get(ctx, req.NamespacedName, set); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	clusters := &clusterv1alpha1.ClusterList{}
	if err := r.Client.List(ctx, clusters); err != nil {
		return ctrl.Result{}, err
	}
	want := setStatus(set, len(Members(set, clusters.Items)))
	if want.ClusterCount == set.Status.ClusterCount && conditionsEqual(want.Conditions, set.Status.Conditions) {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, client.IgnoreNotFound(scheme.ApplyStatus(ctx, r.Client, set, setStatusManager, &want))
}
