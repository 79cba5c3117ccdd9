package multicluster

import (
	"context"
	"fmt"
	"sync"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/event"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// MemberConfigFunc returns how the hub reaches a cluster's member and a fingerprint of those credentials, or
// a nil config when the hub's collector does not serve the cluster.
type MemberConfigFunc func(ctx context.Context, cluster string) (cfg *rest.Config, credentials string, err error)

// memberSlices follows the EndpointSlices of the members the hub collects from: one informer per member,
// started when an export request of the member is first looked at and built anew when the member's
// credentials change. Every change of a Service's slice in a member wakes that Service's export request at
// once, where reading the member on a timer made consumers lag by the period. The informer caches only slices
// that belong to a Service, without their managedFields.
type memberSlices struct {
	configFor MemberConfigFunc
	// events wakes the collector: a GenericEvent of the export request a member slice belongs to.
	events chan event.GenericEvent

	mu      sync.Mutex
	watches map[string]*sliceWatch
}

type sliceWatch struct {
	credentials string
	informer    cache.SharedIndexInformer
	stop        chan struct{}
}

func newMemberSlices(configFor MemberConfigFunc) *memberSlices {
	return &memberSlices{configFor: configFor, events: make(chan event.GenericEvent, 1024), watches: map[string]*sliceWatch{}}
}

// lister returns the lister of a cluster's member, reading the informer's cache; nil when the cluster is not
// served (its informer, if any, stops). Until the informer has listed the member the lister fails, so an
// unlisted member is never read as one without slices; the informer's first listing wakes the requests.
func (m *memberSlices) lister(ctx context.Context, cluster string) (SliceLister, error) {
	cfg, credentials, err := m.configFor(ctx, cluster)
	if err != nil {
		return nil, err
	}
	if cfg == nil {
		m.drop(cluster)
		return nil, nil
	}
	w, err := m.watch(cluster, cfg, credentials)
	if err != nil {
		return nil, err
	}
	return func(_ context.Context, namespace, name string) ([]discoveryv1.EndpointSlice, error) {
		if !w.informer.HasSynced() {
			return nil, fmt.Errorf("the EndpointSlices of cluster %s are not listed yet", cluster)
		}
		objs, err := w.informer.GetIndexer().ByIndex(cache.NamespaceIndex, namespace)
		if err != nil {
			return nil, err
		}
		var out []discoveryv1.EndpointSlice
		for _, o := range objs {
			if s, ok := o.(*discoveryv1.EndpointSlice); ok && s.Labels[discoveryv1.LabelServiceName] == name {
				out = append(out, *s.DeepCopy())
			}
		}
		return out, nil
	}, nil
}

// watch returns the member's informer, starting it, or starting it anew when the credentials changed.
func (m *memberSlices) watch(cluster string, cfg *rest.Config, credentials string) (*sliceWatch, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if w, ok := m.watches[cluster]; ok && w.credentials == credentials {
		return w, nil
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = 0 // a request timeout would cut every watch
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	factory := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = discoveryv1.LabelServiceName
	}))
	w := &sliceWatch{credentials: credentials, informer: factory.Discovery().V1().EndpointSlices().Informer(), stop: make(chan struct{})}
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
	if old, ok := m.watches[cluster]; ok {
		close(old.stop)
	}
	m.watches[cluster] = w
	factory.Start(w.stop)
	return w, nil
}

// drop stops following a cluster that left or is no longer served.
func (m *memberSlices) drop(cluster string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if w, ok := m.watches[cluster]; ok {
		close(w.stop)
		delete(m.watches, cluster)
	}
}

func (m *memberSlices) stopAll() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for cluster, w := range m.watches {
		close(w.stop)
		delete(m.watches, cluster)
	}
}
