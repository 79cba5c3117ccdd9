package mcs

import (
	"context"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/members"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

// pushResync is how often the hub looks at an export request of a Push member when nothing woke it: the
// member's slices are watched, so this only looks at the cache again, which rereads the member's credentials
// (a rotated Secret) when they are older than members.TTL.
const pushResync = time.Minute

// SetupAgentCollector registers the collector of an agent's cluster with the agent's manager (whose cache
// holds the cluster's namespace on the hub). It follows the member's EndpointSlices through a cache of its
// own, so a scale-out in the member is reported as soon as the member's EndpointSlice controller writes it.
func SetupAgentCollector(mgr ctrl.Manager, memberConfig *rest.Config, clusterName, fieldManager string) error {
	cfg := rest.CopyConfig(memberConfig)
	cfg.Timeout = 0 // a request timeout would cut every watch
	member, err := cluster.New(cfg, func(o *cluster.Options) { o.Scheme = scheme.New() })
	if err != nil {
		return err
	}
	if err := mgr.Add(member); err != nil {
		return err
	}
	c := &Collector{Hub: mgr.GetClient(), FieldManager: fieldManager, Member: func(_ context.Context, name string) (SliceLister, error) {
		if name != clusterName {
			return nil, nil
		}
		return cacheLister(member.GetCache()), nil
	}}
	namespace := clusterv1alpha1.ClusterNamespace(clusterName)
	memberSlice := handler.TypedEnqueueRequestsFromMapFunc(func(_ context.Context, s *discoveryv1.EndpointSlice) []reconcile.Request {
		service := s.Labels[discoveryv1.LabelServiceName]
		if service == "" {
			return nil
		}
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: namespace, Name: requestName(s.Namespace, service)}}}
	})
	return ctrl.NewControllerManagedBy(mgr).Named("multicluster-collector").
		// The agent builds its manager anew with each certificate.
		WithOptions(controller.Options{SkipNameValidation: ptr.To(true)}).
		For(&mcsv1alpha1.ServiceExport{}).
		Watches(&discoveryv1.EndpointSlice{}, handler.EnqueueRequestsFromMapFunc(reportRequest)).
		WatchesRawSource(source.Kind(member.GetCache(), &discoveryv1.EndpointSlice{}, memberSlice)).
		Complete(c)
}

// SetupPushCollector registers the hub's collector for Push clusters: the same collector, following each
// Push member's EndpointSlices through an informer built with the credentials the hub keeps for it.
func SetupPushCollector(mgr ctrl.Manager) error {
	isPush := func(c *clusterv1alpha1.Cluster) bool { return c.Spec.SyncMode == clusterv1alpha1.Push }
	return SetupMemberCollector(mgr, "multicluster-push-collector", isPush, members.FromSecrets(mgr.GetAPIReader()), pushResync)
}

// SetupMemberCollector registers a collector named name that reads, on the hub's side, the members of the
// clusters serves accepts, reached with config and watching their EndpointSlices; resync is how often a
// request is looked at when nothing woke it.
func SetupMemberCollector(mgr ctrl.Manager, name string, serves func(*clusterv1alpha1.Cluster) bool, config members.ConfigFunc, resync time.Duration) error {
	followed := newMemberSlices(mgr.GetClient(), serves, config)
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		followed.watches.Close()
		return nil
	})); err != nil {
		return err
	}
	c := &Collector{Hub: mgr.GetClient(), FieldManager: workv1alpha1.ControllerFieldManager(name), Resync: resync, Member: followed.lister}
	inClusterNamespace := predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, ok := clusterv1alpha1.ClusterOfNamespace(o.GetNamespace())
		return ok
	})
	return ctrl.NewControllerManagedBy(mgr).Named(name).
		For(&mcsv1alpha1.ServiceExport{}, builder.WithPredicates(inClusterNamespace)).
		Watches(&discoveryv1.EndpointSlice{}, handler.EnqueueRequestsFromMapFunc(reportRequest)).
		WatchesRawSource(source.Channel(followed.events, &handler.EnqueueRequestForObject{})).
		// A cluster that left has no request left to look at it: its informer stops with it.
		Watches(&clusterv1alpha1.Cluster{}, handler.Funcs{
			DeleteFunc: func(_ context.Context, e event.DeleteEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				followed.watches.Drop(e.Object.GetName())
			}}).
		Complete(c)
}

// reportRequest maps a reported EndpointSlice to its export request.
func reportRequest(_ context.Context, o client.Object) []reconcile.Request {
	l := o.GetLabels()
	if _, ok := clusterv1alpha1.ClusterOfNamespace(o.GetNamespace()); !ok || l[LabelExportNamespace] == "" || l[LabelServiceName] == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: requestName(l[LabelExportNamespace], l[LabelServiceName])}}}
}

func cacheLister(c cache.Cache) SliceLister {
	return func(ctx context.Context, namespace, name string) ([]discoveryv1.EndpointSlice, error) {
		list := &discoveryv1.EndpointSliceList{}
		err := c.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{discoveryv1.LabelServiceName: name})
		return list.Items, err
	}
}
