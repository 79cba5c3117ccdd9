package quota

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// controllerName is the quota controller's name in --controllers.
const controllerName = "federated-quota"

// fieldManager writes the quota's status and its Works.
var fieldManager = workv1alpha1.ControllerFieldManager(controllerName)

// +kubebuilder:rbac:groups=policy.flotilla.io,resources=federatedresourcequotas,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=policy.flotilla.io,resources=federatedresourcequotas/status,verbs=patch
// +kubebuilder:rbac:groups=work.flotilla.io,resources=works,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=work.flotilla.io,resources=resourcebindings,verbs=get;list;watch

// Controller keeps each FederatedResourceQuota: a Work per static assignment in its cluster's namespace, which
// the cluster's executor applies as a ResourceQuota in the member, the Works of clusters no longer assigned
// deleted (and with them their ResourceQuotas), and the status: overall, overallUsed from the namespace's
// bindings, each assignment's hard and used as its member reports them, and the Enforced condition. A quota
// being deleted keeps its finalizer until its Works are gone. It owns the quota's status, finalizer and Works,
// and writes nothing else.
type Controller struct {
	Client client.Client
	// Reader lists a deleted quota's Works from the API server: a Work the cache has not seen yet would let the
	// quota go with its member ResourceQuota left behind.
	Reader client.Reader
}

// Setup registers the quota controller. It is woken by quotas, by their Works (the members' reports), and
// by a namespace's bindings when what they ask of the fleet changes.
func Setup(mgr ctrl.Manager) error {
	r := &Controller{Client: mgr.GetClient(), Reader: mgr.GetAPIReader()}
	return ctrl.NewControllerManagedBy(mgr).Named(controllerName).
		For(&policyv1alpha1.FederatedResourceQuota{}).
		Watches(&workv1alpha1.Work{}, handler.EnqueueRequestsFromMapFunc(quotaOfWork)).
		Watches(&workv1alpha1.ResourceBinding{}, handler.EnqueueRequestsFromMapFunc(r.quotasOfNamespace), builder.WithPredicates(demandChanged)).
		Complete(r)
}

// quotaOfWork maps a quota's Work to its quota.
func quotaOfWork(_ context.Context, o client.Object) []reconcile.Request {
	w, ok := o.(*workv1alpha1.Work)
	if !ok {
		return nil
	}
	if key, ok := (Works{}).Of(w); ok {
		return []reconcile.Request{{NamespacedName: key}}
	}
	return nil
}

// quotasOfNamespace maps a binding to the quotas of its namespace.
func (r *Controller) quotasOfNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	quotas := &policyv1alpha1.FederatedResourceQuotaList{}
	if err := r.Client.List(ctx, quotas, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	out := make([]reconcile.Request, len(quotas.Items))
	for i := range quotas.Items {
		out[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&quotas.Items[i])}
	}
	return out
}

// demandChanged passes a binding's creation and deletion, and an update that changes what it asks of the
// fleet; not the status writes that make up most of a binding's updates.
var demandChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*workv1alpha1.ResourceBinding)
		n, ok2 := e.ObjectNew.(*workv1alpha1.ResourceBinding)
		return ok1 && ok2 && !equality.Semantic.DeepEqual(BindingDemand(&o.Spec), BindingDemand(&n.Spec))
	},
}

// Reconcile brings one quota's Works and status to its spec, or, deleted, removes its Works and then its
// finalizer.
func (r *Controller) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	q := &policyv1alpha1.FederatedResourceQuota{}
	if err := r.Client.Get(ctx, req.NamespacedName, q); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if q.DeletionTimestamp != nil {
		return ctrl.Result{}, r.finalize(ctx, q)
	}
	if !controllerutil.ContainsFinalizer(q, Finalizer) {
		patch := client.MergeFromWithOptions(q.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.AddFinalizer(q, Finalizer)
		if err := r.Client.Patch(ctx, q, patch); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	}
	unjoined, err := r.syncWorks(ctx, q)
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.updateStatus(ctx, q, unjoined)
}

// syncWorks gives each static assignment its Work and deletes the Works of clusters no longer assigned: their
// executors delete those member ResourceQuotas, which removing the assignment asked for. It returns the
// assigned clusters that have no namespace on the hub.
func (r *Controller) syncWorks(ctx context.Context, q *policyv1alpha1.FederatedResourceQuota) ([]string, error) {
	var unjoined, assigned []string
	for _, a := range q.Spec.StaticAssignments {
		assigned = append(assigned, a.ClusterName)
		ok, err := r.ensureWork(ctx, q, a)
		if err != nil {
			return nil, err
		}
		if !ok {
			unjoined = append(unjoined, a.ClusterName)
		}
	}
	works, err := r.works(ctx, q)
	if err != nil {
		return nil, err
	}
	for i := range works {
		cluster, _ := clusterv1alpha1.ClusterOfNamespace(works[i].Namespace)
		if !slices.Contains(assigned, cluster) && works[i].DeletionTimestamp == nil {
			if err := client.IgnoreNotFound(r.Client.Delete(ctx, &works[i])); err != nil {
				return nil, err
			}
		}
	}
	return unjoined, nil
}

// finalize deletes a deleted quota's Works and lets the quota go once none is left; the Works' deletion wakes
// it again.
func (r *Controller) finalize(ctx context.Context, q *policyv1alpha1.FederatedResourceQuota) error {
	if !controllerutil.ContainsFinalizer(q, Finalizer) {
		return nil
	}
	list := &workv1alpha1.WorkList{}
	if err := r.Reader.List(ctx, list, client.MatchingLabels(Works{}.Labels(q))); err != nil {
		return err
	}
	works := list.Items
	for i := range works {
		if works[i].DeletionTimestamp == nil {
			if err := client.IgnoreNotFound(r.Client.Delete(ctx, &works[i])); err != nil {
				return err
			}
		}
	}
	if len(works) > 0 {
		return nil
	}
	patch := client.MergeFromWithOptions(q.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(q, Finalizer)
	return client.IgnoreNotFound(r.Client.Patch(ctx, q, patch))
}
