package shard

import (
	"context"
	"slices"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// ClusterOf says which cluster an object of a sharded controller is about; false: none, and no replica acts
// on it.
type ClusterOf func(client.Object) (string, bool)

// Filter passes the events of objects whose cluster this replica owns. Without sharding it passes all.
func (g *Group) Filter(clusterOf ClusterOf) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		if g == nil {
			return true
		}
		cluster, ok := clusterOf(o)
		return ok && g.Owns(cluster)
	})
}

// Requeue is a source that, whenever this replica gains clusters, queues again the requests of list (every
// object of the controller, read from its cache) whose cluster it gained: their events went to another replica
// until then. clusterOf says which cluster a request is about. Without sharding it queues nothing.
func (g *Group) Requeue(list func(ctx context.Context) ([]reconcile.Request, error), clusterOf func(reconcile.Request) (string, bool)) source.Source {
	return source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		if g == nil {
			return nil
		}
		listener := func(gained func(string) bool) {
			go func() {
				for {
					requests, err := list(ctx)
					if err == nil {
						for _, r := range requests {
							if cluster, ok := clusterOf(r); ok && gained(cluster) {
								q.Add(r)
							}
						}
						return
					}
					ctrl.LoggerFrom(ctx).Error(err, "shard group: listing the objects of gained clusters, again in a second")
					select {
					case <-ctx.Done():
						return
					case <-time.After(time.Second):
					}
				}
			}()
		}
		// Gains told before this source started were not queued here: whatever is owned already counts as
		// gained.
		g.mu.Lock()
		g.listeners = append(g.listeners, listener)
		members := slices.Clone(g.members)
		g.mu.Unlock()
		if slices.Contains(members, g.identity) {
			listener(func(cluster string) bool { return Owner(cluster, members) == g.identity })
		}
		return nil
	})
}

// Options are a sharded controller's options: with sharding it runs on every replica, not only the leader.
func (g *Group) Options(o controller.Options) controller.Options {
	if g != nil {
		o.NeedLeaderElection = ptr.To(false)
	}
	return o
}
