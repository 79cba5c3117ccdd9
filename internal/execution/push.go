package execution

import (
	"context"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/members"
	"github.com/flotilla-io/flotilla/internal/shard"
)

// SetupPush registers the hub's executor, which applies the Works of Push clusters with the credentials the
// hub stores for them, marking what it applies with hubID. Works of Pull clusters are left to their agents. A
// bounded pool of workers keeps one slow member from holding up the others. With a shard group it runs on
// every hub replica and applies the Works of the clusters its replica owns.
func SetupPush(mgr ctrl.Manager, hubID string, group *shard.Group) error {
	if hubID == "" {
		return errors.New("push-execution: the hub's ID is unknown")
	}
	e := &Executor{Hub: mgr.GetClient(), Works: mgr.GetAPIReader(), FieldManager: workv1alpha1.ControllerFieldManager("push-execution"), HubID: hubID}
	// A member's clients, and the watches on what was applied, are built anew only when its credentials change.
	cache := members.NewCache(members.FromSecrets(mgr.GetAPIReader()), func(_ string, cfg *rest.Config) (*Member, error) {
		m, err := NewMember(cfg)
		if err != nil {
			return nil, err
		}
		m.WatchApplied(e.Notify)
		return m, nil
	}, (*Member).Stop)
	e.MemberFor = func(ctx context.Context, namespace string) (*Member, error) {
		name, ok := clusterv1alpha1.ClusterOfNamespace(namespace)
		if !ok {
			return nil, nil
		}
		if !group.Owns(name) {
			cache.Drop(name) // another hub replica applies its Works now
			return nil, nil
		}
		cluster := &clusterv1alpha1.Cluster{}
		if err := e.Hub.Get(ctx, client.ObjectKey{Name: name}, cluster); err != nil || cluster.Spec.SyncMode != clusterv1alpha1.Push {
			if err == nil || apierrors.IsNotFound(err) {
				cache.Drop(name) // gone or pulled now: its objects stay as they are, unwatched
			}
			return nil, client.IgnoreNotFound(err)
		}
		return cache.Get(ctx, cluster)
	}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		cache.Close()
		return nil
	})); err != nil {
		return err
	}
	clusterOf := func(namespace string) (string, bool) { return clusterv1alpha1.ClusterOfNamespace(namespace) }
	e.Shard = group.Filter(func(o client.Object) (string, bool) { return clusterOf(o.GetNamespace()) })
	e.Requeue = group.Requeue(shard.OneCluster(func(ctx context.Context) ([]reconcile.Request, error) {
		works := &workv1alpha1.WorkList{}
		if err := mgr.GetClient().List(ctx, works); err != nil {
			return nil, err
		}
		requests := make([]reconcile.Request, len(works.Items))
		for i, w := range works.Items {
			requests[i].NamespacedName = client.ObjectKeyFromObject(&w)
		}
		return requests, nil
	}, func(r reconcile.Request) (string, bool) { return clusterOf(r.Namespace) }))
	return e.SetupWithManager(mgr, "push-execution", group.Options(controller.Options{}))
}
