package clusterset

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/events"
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

// bindingStatusManager owns a ClusterSetBinding's status.
var bindingStatusManager = workv1alpha1.ControllerFieldManager("clusterset-binding-status")

// bindingSetIndex indexes ClusterSetBindings by the set they name.
const bindingSetIndex = "spec.clusterSet"

// +kubebuilder:rbac:groups=cluster.flotilla.io,resources=clustersetbindings,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.flotilla.io,resources=clustersetbindings/status,verbs=patch
// +kubebuilder:rbac:groups=cluster.flotilla.io,resources=clustersets;clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// BindingStatus writes into each ClusterSetBinding whether its set exists (Bound) and the Clusters it grants
// (clusters, clusterCount), so a user who may read the binding but not list Clusters sees where the
// namespace may place. It writes only when that changed, and records an event when Bound changes.
type BindingStatus struct {
	Client   client.Client
	Recorder events.EventRecorder
}

// SetupBindingStatus registers the controller: a binding is looked at when it is created or changed, the
// bindings of a set when the set appears, goes or changes, and every binding when a Cluster appears, goes or
// is relabelled (not at its heartbeats).
func SetupBindingStatus(mgr ctrl.Manager) error {
	r := &BindingStatus{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("flotilla-clusterset")}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &clusterv1alpha1.ClusterSetBinding{}, bindingSetIndex, func(o client.Object) []string {
		return []string{o.(*clusterv1alpha1.ClusterSetBinding).Spec.ClusterSet}
	}); err != nil {
		return err
	}
	bindingsOf := func(ctx context.Context, opts ...client.ListOption) []reconcile.Request {
		bindings := &clusterv1alpha1.ClusterSetBindingList{}
		if err := r.Client.List(ctx, bindings, opts...); err != nil {
			return nil // the cache lists without error once synced
		}
		requests := make([]reconcile.Request, len(bindings.Items))
		for i := range bindings.Items {
			requests[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&bindings.Items[i])}
		}
		return requests
	}
	ofSet := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, set client.Object) []reconcile.Request {
		return bindingsOf(ctx, client.MatchingFields{bindingSetIndex: set.GetName()})
	})
	every := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request { return bindingsOf(ctx) })
	return ctrl.NewControllerManagedBy(mgr).Named("clusterset-binding-status").
		For(&clusterv1alpha1.ClusterSetBinding{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&clusterv1alpha1.ClusterSet{}, ofSet, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&clusterv1alpha1.Cluster{}, every, builder.WithPredicates(membershipChanged)).
		Complete(r)
}

// Reconcile applies one binding's status when it changed.
func (r *BindingStatus) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	b := &clusterv1alpha1.ClusterSetBinding{}
	if err := r.Client.Get(ctx, req.NamespacedName, b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	set := &clusterv1alpha1.ClusterSet{}
	var members []string
	if err := r.Client.Get(ctx, client.ObjectKey{Name: b.Spec.ClusterSet}, set); apierrors.IsNotFound(err) {
		set = nil
	} else if err != nil {
		return ctrl.Result{}, err
	} else {
		clusters := &clusterv1alpha1.ClusterList{}
		if err := r.Client.List(ctx, clusters); err != nil {
			return ctrl.Result{}, err
		}
		members = Members(set, clusters.Items)
	}
	want := bindingStatus(b, set, members)
	if want.ClusterCount == b.Status.ClusterCount && slices.Equal(want.Clusters, b.Status.Clusters) && conditionsEqual(want.Conditions, b.Status.Conditions) {
		return ctrl.Result{}, nil
	}
	if err := scheme.ApplyStatus(ctx, r.Client, b, bindingStatusManager, &want); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := meta.FindStatusCondition(b.Status.Conditions, clusterv1alpha1.ClusterSetBindingConditionBound)
	now := meta.FindStatusCondition(want.Conditions, clusterv1alpha1.ClusterSetBindingConditionBound)
	if before == nil || before.Reason != now.Reason {
		kind := corev1.EventTypeNormal
		if now.Reason == ReasonClusterSetNotFound {
			kind = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(b, nil, kind, now.Reason, "Bind", "%s", now.Message)
	}
	return ctrl.Result{}, nil
}

// Setup registers the cluster-set controllers: the built-in sets, the status of sets and that of bindings.
func Setup(mgr ctrl.Manager) error {
	for _, setup := range []func(ctrl.Manager) error{SetupBuiltinSets, SetupSetStatus, SetupBindingStatus} {
		if err := setup(mgr); err != nil {
			return err
		}
	}
	return nil
}
