package mirror

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	ocmclusterv1beta1 "github.com/flotilla-io/flotilla/api/ocm/cluster/v1beta1"
)

// +kubebuilder:rbac:groups=cluster.flotilla.io,resources=placementdecisions;placements,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.open-cluster-management.io,resources=placementdecisions,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=cluster.open-cluster-management.io,resources=placementdecisions/status,verbs=update

// Decisions publishes the decisions of each Placement mirrored from an OCM Placement as OCM's
// PlacementDecisions: each cluster.flotilla.io PlacementDecision of such a Placement is copied into the OCM
// PlacementDecision of the same name and namespace, owned by the OCM Placement and labelled as OCM labels its
// own, so the tools that read OCM's decisions (Argo CD's generator, clusteradm) read the hub's. An OCM
// PlacementDecision whose Flotilla one is gone is deleted; one changed by anyone else is put back.
type Decisions struct {
	Client client.Client
	Scheme *runtime.Scheme
}

// SetupDecisions registers Decisions with the manager.
func SetupDecisions(mgr ctrl.Manager) error {
	sameKey := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(o)}}
	})
	return ctrl.NewControllerManagedBy(mgr).Named("ocm-placementdecision").
		For(&clusterv1alpha1.PlacementDecision{}).
		Watches(&ocmclusterv1beta1.PlacementDecision{}, sameKey).
		Complete(&Decisions{Client: mgr.GetClient(), Scheme: mgr.GetScheme()})
}

// Reconcile makes the OCM PlacementDecision of a name what the Flotilla one of that name says, if its
// Placement is an OCM Placement's twin.
func (r *Decisions) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ours := &ocmclusterv1beta1.PlacementDecision{}
	if err := r.Client.Get(ctx, req.NamespacedName, ours); apierrors.IsNotFound(err) {
		ours = nil
	} else if err != nil {
		return ctrl.Result{}, err
	}
	owner, decision, err := r.source(ctx, req.NamespacedName)
	if err != nil {
		return ctrl.Result{}, err
	}
	if owner == nil {
		// No Flotilla decision of an OCM Placement by this name: an OCM decision the hub wrote goes (its
		// Placement decided fewer groups, or is no longer OCM's); one it did not write is left alone.
		if ours == nil || !wrote(ours) {
			return ctrl.Result{}, nil
		}
		uid, rv := ours.UID, ours.ResourceVersion
		return ctrl.Result{}, client.IgnoreNotFound(r.Client.Delete(ctx, ours, client.Preconditions{UID: &uid, ResourceVersion: &rv}))
	}
	labels := map[string]string{
		ocmclusterv1beta1.LabelPlacement:          owner.Name,
		ocmclusterv1beta1.LabelDecisionGroupIndex: decision.Labels[clusterv1alpha1.LabelDecisionGroupIndex],
		ocmclusterv1beta1.LabelDecisionGroupName:  decision.Labels[clusterv1alpha1.LabelDecisionGroupName],
	}
	if ours == nil {
		ours = &ocmclusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Name: req.Name, Namespace: req.Namespace, Labels: labels}}
		if err := controllerutil.SetControllerReference(owner, ours, r.Scheme); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.Client.Create(ctx, ours); err != nil {
			return ctrl.Result{}, err
		}
	} else if !metav1.IsControlledBy(ours, owner) {
		return ctrl.Result{}, nil // someone else's object of the same name: not taken over
	} else if !equality.Semantic.DeepEqual(ours.Labels, labels) {
		ours.Labels = labels
		if err := r.Client.Update(ctx, ours); err != nil {
			return ctrl.Result{}, err
		}
	}
	if equality.Semantic.DeepEqual(ours.Status, decision.Status) {
		return ctrl.Result{}, nil
	}
	ours.Status = *decision.Status.DeepCopy()
	return ctrl.Result{}, r.Client.Status().Update(ctx, ours)
}

// source is the Flotilla PlacementDecision of key and the OCM Placement whose twin made it; nil, nil when
// there is no such decision or its Placement is not an OCM Placement's twin.
func (r *Decisions) source(ctx context.Context, key client.ObjectKey) (*ocmclusterv1beta1.Placement, *clusterv1alpha1.PlacementDecision, error) {
	decision := &clusterv1alpha1.PlacementDecision{}
	if err := r.Client.Get(ctx, key, decision); err != nil {
		return nil, nil, client.IgnoreNotFound(err)
	}
	placementKey := client.ObjectKey{Namespace: key.Namespace, Name: decision.Labels[clusterv1alpha1.LabelPlacement]}
	twin := &clusterv1alpha1.Placement{}
	if err := r.Client.Get(ctx, placementKey, twin); err != nil {
		return nil, nil, client.IgnoreNotFound(err)
	}
	owner := &ocmclusterv1beta1.Placement{}
	if err := r.Client.Get(ctx, placementKey, owner); err != nil {
		return nil, nil, client.IgnoreNotFound(err)
	}
	if !metav1.IsControlledBy(twin, owner) || !metav1.IsControlledBy(decision, twin) {
		return nil, nil, nil
	}
	return owner, decision, nil
}

// wrote says whether an OCM PlacementDecision is one Decisions wrote: controlled by the OCM Placement it is
// labelled with.
func wrote(d *ocmclusterv1beta1.PlacementDecision) bool {
	ref := metav1.GetControllerOf(d)
	return ref != nil && ref.Kind == "Placement" && ref.APIVersion == ocmclusterv1beta1.GroupVersion.String() &&
		ref.Name == d.Labels[ocmclusterv1beta1.LabelPlacement]
}
