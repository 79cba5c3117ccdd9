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

// Requeue is a source that, whenever this replica gains clusters, queues the requests list returns for them:
// their events went to another replica until then. list reads the controller's objects from its cache and
// keeps those about a cluster gained says this replica gained. Without sharding it queues nothing.
func (g *Group) Requeue(list func(ctx context.Context, gained func(cluster string) bool) ([]reconcile.Request, error)) source.Source {
	return source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		if g == nil {
			return nil
		}
		listener := func(gained func(string) bool) {
			go func() {
				for {
					requests, err := list(ctx, gained)
					if err == nil {
						for _, r := range requests {
							q.Add(r)
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

// OneCluster adapts a list of requests each about one cluster (clusterOf says which) to Requeue: it keeps
// those about a gained cluster.
func OneCluster(list func(ctx context.Context) ([]reconcile.Request, error), clusterOf func(reconcile.Request) (string, bool)) func(context.Context, func(string) bool) ([]reconcile.Request, error) {
	return func(ctx context.Context, gained func(string) bool) ([]reconcile.Request, error) {
		requests, err := list(ctx)
		if err != nil {
			return nil, err
		}
		return slices.DeleteFunc(requests, func(r reconcile.Request) bool {
			cluster, ok := clusterOf(r)
			return !ok || !gained(cluster)
		}), nil
	}
}

// Leading says whether this hub process leads, from the manager's election (mgr.Elected()). The controllers
// that run on every replica under sharding leave to the leader what is decided for a whole object, not per
// cluster. Without sharding such controllers run on the leader alone: always true (the manager may close
// elected only after it started them).
func (g *Group) Leading(elected <-chan struct{}) func() bool {
	if g == nil {
		return func() bool { return true }
	}
	return func() bool {
		select {
		case <-elected:
			return true
		default:
			return false
		}
	}
}

// WhileLeading passes every event while this hub process leads (leading, from Leading): the leader acts on
// objects of every cluster for what it alone decides.
func WhileLeading(leading func() bool) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(client.Object) bool { return leading() })
}

// OnElected is a source that queues every request list returns once this hub process is elected leader:
// what a sharded controller leaves to the leader was skipped on this replica until then. Without sharding
// the controller starts on the leader and reads everything anyway: it queues nothing.
func (g *Group) OnElected(elected <-chan struct{}, list func(ctx context.Context) ([]reconcile.Request, error)) source.Source {
	return source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		if g == nil {
			return nil
		}
		go func() {
			select {
			case <-ctx.Done():
				return
			case <-elected:
			}
			for {
				requests, err := list(ctx)
				if err == nil {
					for _, r := range requests {
						q.Add(r)
					}
					return
				}
				ctrl.LoggerFrom(ctx).Error(err, "shard group: listing what the new leader takes on, again in a second")
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Second):
				}
			}
		}()
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
