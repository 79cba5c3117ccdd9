package mcs

import (
	"context"
	"fmt"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/members"
)

// memberSlices follows the EndpointSlices of the members the hub collects from: one informer per member,
// started when an export request of the member is first looked at and held in a members.Cache, which builds
// it anew when the member's credentials change. Every change of a Service's slice in a member wakes that
// Service's export request at once, where reading the member on a timer made consumers lag by the period.
// The informer caches only slices that belong to a Service, without their managedFields.
type memberSlices struct {
	// clusters reads the Cluster objects; serves says which of them the collector follows.
	clusters client.Reader
	serves   func(*clusterv1alpha1.Cluster) bool
	watches  *members.Cache[*sliceWatch]
	// events wakes the collector: a GenericEvent of the export request a member slice belongs to.
	events chan event.GenericEvent
}

type sliceWatch struct {
	informer cache.SharedIndexInformer
	stop     chan struct{}
}

func newMemberSlices(clusters client.Reader, serves func(*clusterv1alpha1.Cluster) bool, config members.ConfigFunc) *memberSlices {
	m := &memberSlices{clusters: clusters, serves: serves, events: make(chan event.GenericEvent, 1024)}
	m.watches = members.NewCache(config, m.watch, func(w *sliceWatch) { close(w.stop) })
	return m
}

// lister returns the lister of a cluster's member, reading the informer's cache; nil when the cluster is not
// served (its informer, if any, stops). Until the informer has listed the member the lister fails, so an
// unlisted member is never read as one without slices; the informer's first listing wakes the requests.
func (m *memberSlices) lister(ctx context.Context, name string) (SliceLister, error) {
	cluster := &clusterv1alpha1.Cluster{}
	if err := m.clusters.Get(ctx, client.ObjectKey{Name: name}, cluster); err != nil || !m.serves(cluster) {
		if err == nil || apierrors.IsNotFound(err) {
			m.watches.Drop(name)
		}
		return nil, client.IgnoreNotFound(err)
	}
	w, err := m.watches.Get(ctx, cluster)
	if err != nil {
		return nil, err
	}
	return func(_ context.Context, namespace, service string) ([]discoveryv1.EndpointSlice, error) {
		if !w.informer.HasSynced() {
			return nil, fmt.Errorf("the EndpointSlices of cluster %s are not listed yet", name)
		}
		objs, err := w.informer.GetIndexer().ByIndex(cache.NamespaceIndex, namespace)
		if err != nil {
			return nil, err
		}
		var out []discoveryv1.EndpointSlice
		for _, o := range objs {
			if s, ok := o.(*discoveryv1.EndpointSlice); ok && s.Labels[discoveryv1.LabelServiceName] == service {
				out = append(out, *s.DeepCopy())
			}
		}
		return out, nil
	}, nil
}

// watch starts following the EndpointSlices of a cluster's member (the build function of the cache).
func (m *memberSlices) watch(cluster string, cfg *rest.Config) (*sliceWatch, error) {
	cfg.Timeout = 0 // a request timeout would cut every watch
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	factory := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = discoveryv1.LabelServiceName
	}))
	w := &sliceWatch{informer: factory.Discovery().V1().EndpointSlices().Informer(), stop: make(chan struct{})}
	_ = w.informer.SetTransform(func(o any) (any, error) {
		if obj, ok := o.(metav1.Object); ok {
			obj.SetManagedFields(nil)
		}
		return o, nil
	})
	wake := func(o any) {
		if tombstone, ok := o.(cache.DeletedFinalStateUnknown); ok {
			o = tombstone.Obj
		}
		s, ok := o.(*discoveryv1.EndpointSlice)
		if !ok || s.Labels[discoveryv1.LabelServiceName] == "" {
			return
		}
		request := &mcsv1alpha1.ServiceExport{}
		request.Namespace, request.Name = clusterv1alpha1.ClusterNamespace(cluster), requestName(s.Namespace, s.Labels[discoveryv1.LabelServiceName])
		select {
		case m.events <- event.GenericEvent{Object: request}:
		case <-w.stop:
		}
	}
	if _, err := w.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: wake, UpdateFunc: func(_, o any) { wake(o) }, DeleteFunc: wake,
	}); err != nil {
		return nil, err
	}
	factory.Start(w.stop)
	return w, nil
}
