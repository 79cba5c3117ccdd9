package execution

import (
	"context"
	"errors"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/members"
	"github.com/flotilla-io/flotilla/internal/shard"
)

// SetupPush registers the hub's executor, which applies the Works of Push clusters with the credentials the
// hub stores for them, marking what it applies with hubID. Works of Pull clusters are left to their agents:
// the executor does not hear of them (pushClusters). A bounded pool of workers keeps one slow member from holding up the others. With a shard group it runs on
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
	pushed := &pushClusters{}
	serves := func(namespace string) bool {
		cluster, ok := clusterv1alpha1.ClusterOfNamespace(namespace)
		return ok && pushed.has(cluster) && group.Owns(cluster)
	}
	e.Serves = predicate.NewPredicateFuncs(func(o client.Object) bool { return serves(o.GetNamespace()) })
	e.Requeue = []source.Source{
		source.Kind(mgr.GetCache(), &clusterv1alpha1.Cluster{}, pushed.follow(mgr.GetClient())),
		group.Requeue(shard.OneCluster(func(ctx context.Context) ([]reconcile.Request, error) {
			return worksOf(ctx, mgr.GetClient(), func(w *workv1alpha1.Work) bool {
				cluster, ok := clusterv1alpha1.ClusterOfNamespace(w.Namespace)
				return ok && pushed.has(cluster)
			})
		}, func(r reconcile.Request) (string, bool) { return clusterv1alpha1.ClusterOfNamespace(r.Namespace) })),
	}
	return e.SetupWithManager(mgr, "push-execution", group.Options(controller.Options{}))
}

// pushClusters follows, from the Cluster informer, which clusters the hub pushes to, so that the hub's
// executor hears only of their Works. (It heard of every Work and dropped those of Pull clusters: 53,000
// reconciles in a fan-out to 2,000 clusters.)
type pushClusters struct {
	mu    sync.RWMutex
	names map[string]bool
}

func (p *pushClusters) has(cluster string) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.names[cluster]
}

// note records whether cluster is pushed to and says whether that changed.
func (p *pushClusters) note(cluster string, push bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.names[cluster] == push {
		return false
	}
	if p.names == nil {
		p.names = map[string]bool{}
	}
	if push {
		p.names[cluster] = true
	} else {
		delete(p.names, cluster)
	}
	return true
}

// follow is the handler of Cluster events. When a cluster comes to be pushed to, or stops, it queues the
// cluster's Works, for the executor to take them up or let their member go. They are listed from the cache
// after the note: a Work event dropped before it was already in the cache then.
func (p *pushClusters) follow(works client.Reader) handler.TypedEventHandler[*clusterv1alpha1.Cluster, reconcile.Request] {
	changed := func(ctx context.Context, c *clusterv1alpha1.Cluster, push bool, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		if !p.note(c.Name, push) {
			return
		}
		requests, err := worksOf(ctx, works, nil, client.InNamespace(clusterv1alpha1.ClusterNamespace(c.Name)))
		if err != nil {
			// The cache's List fails only before it syncs, and then the Works' own events are still to come.
			ctrl.LoggerFrom(ctx).Error(err, "push-execution: listing the Works of a cluster whose sync mode changed", "cluster", c.Name)
		}
		for _, r := range requests {
			q.Add(r)
		}
	}
	pushes := func(c *clusterv1alpha1.Cluster) bool { return c.Spec.SyncMode == clusterv1alpha1.Push }
	return handler.TypedFuncs[*clusterv1alpha1.Cluster, reconcile.Request]{
		CreateFunc: func(ctx context.Context, e event.TypedCreateEvent[*clusterv1alpha1.Cluster], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			changed(ctx, e.Object, pushes(e.Object), q)
		},
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[*clusterv1alpha1.Cluster], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			changed(ctx, e.ObjectNew, pushes(e.ObjectNew), q)
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[*clusterv1alpha1.Cluster], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			changed(ctx, e.Object, false, q)
		},
	}
}

// worksOf lists the Works keep passes (all when nil) as requests.
func worksOf(ctx context.Context, c client.Reader, keep func(*workv1alpha1.Work) bool, opts ...client.ListOption) ([]reconcile.Request, error) {
	works := &workv1alpha1.WorkList{}
	if err := c.List(ctx, works, opts...); err != nil {
		return nil, err
	}
	var requests []reconcile.Request
	for i := range works.Items {
		if keep == nil || keep(&works.Items[i]) {
			requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&works.Items[i])})
		}
	}
	return requests, nil
}
