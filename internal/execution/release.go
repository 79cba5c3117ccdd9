package execution

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// Releaser removes the execution finalizer from deleted Works whose Cluster is gone from the hub. Their
// member objects stay (a cluster leaving the hub keeps its workloads), and no agent or push credential is
// left to remove the finalizer, which would otherwise hold the Work, and the cluster's namespace, in
// Terminating for good, say after a Cluster was deleted with kubectl while its agent was stopped.
type Releaser struct {
	Client client.Client
	// Clusters reads Clusters from the API server. The cache answers first: a Cluster it holds exists, and
	// the Work is its executor's to finalize. Only a Cluster the cache does not hold is read from the API
	// server, since one not seen yet is not gone.
	Clusters client.Reader
}

// SetupRelease registers the Releaser with the hub's manager.
func SetupRelease(mgr ctrl.Manager) error {
	r := &Releaser{Client: mgr.GetClient(), Clusters: mgr.GetAPIReader()}
	deleted := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetDeletionTimestamp() != nil })
	return ctrl.NewControllerManagedBy(mgr).Named("work-release").For(&workv1alpha1.Work{}, builder.WithPredicates(deleted)).Complete(r)
}

// Reconcile releases one deleted Work of a cluster that is gone.
func (r *Releaser) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	w := &workv1alpha1.Work{}
	if err := r.Client.Get(ctx, req.NamespacedName, w); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	name, ok := clusterv1alpha1.ClusterOfNamespace(w.Namespace)
	if !ok || w.DeletionTimestamp == nil || !controllerutil.ContainsFinalizer(w, workv1alpha1.FinalizerExecution) {
		return ctrl.Result{}, nil
	}
	err := r.Client.Get(ctx, client.ObjectKey{Name: name}, &clusterv1alpha1.Cluster{})
	if apierrors.IsNotFound(err) {
		err = r.Clusters.Get(ctx, client.ObjectKey{Name: name}, &clusterv1alpha1.Cluster{})
	}
	if !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err // the cluster's executor finalizes it
	}
	patch := client.MergeFromWithOptions(w.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(w, workv1alpha1.FinalizerExecution)
	return ctrl.Result{}, client.IgnoreNotFound(r.Client.Patch(ctx, w, patch))
}
