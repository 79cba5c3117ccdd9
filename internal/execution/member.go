package execution

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// Member is how the executor reaches one member cluster.
type Member struct {
	dynamic dynamic.Interface
	kube    kubernetes.Interface
	mapper  *restmapper.DeferredDiscoveryRESTMapper

	mu sync.Mutex
	// namespaces are known to exist: they were created or applied here. One deleted in the member since is
	// forgotten when an apply into it finds it missing (apply.go).
	namespaces map[string]bool
	// swept are the Work namespaces whose objects were swept here, or are being swept (sweep.go).
	swept map[string]bool
	// applied follows the applied objects once WatchApplied was called (watch.go); nil until then.
	applied *appliedObjects
	// watches and watchKube reach the member without the request timeout of cfg, which would cut every watch.
	watches   dynamic.Interface
	watchKube kubernetes.Interface
	// autoscalers follows the member's HorizontalPodAutoscalers once an object with replicas is applied.
	autoscalers autoscalers
	// pending follows the member's Pending pods once a workload is observed (unschedulable.go).
	pending pendingPods
	// stop ends the member's informers.
	stop     chan struct{}
	stopOnce sync.Once
}

// WatchApplied makes the member follow the objects Flotilla applies in it and call notify with an object's
// Work whenever the object's status, generation or deletion changes, until Stop. Call it before the first
// apply.
func (m *Member) WatchApplied(notify func(work types.NamespacedName)) {
	m.applied = newAppliedObjects(m.watches, notify)
}

// Stop stops following the applied objects and the member's autoscalers.
func (m *Member) Stop() {
	if m.applied != nil {
		m.applied.close()
	}
	m.stopOnce.Do(func() { close(m.stop) })
}

// follow starts following the kind of an applied object, when the object carries a status to reflect.
func (m *Member) follow(mapping *meta.RESTMapping, applied *unstructured.Unstructured) {
	if _, hasStatus := applied.Object["status"]; hasStatus && m.applied != nil {
		m.applied.follow(mapping.Resource)
	}
}

// read returns an applied object as the member has it: from the cache of followed kinds, from the member's
// API otherwise.
func (m *Member) read(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	ri, mapping, err := m.resource(obj.GroupVersionKind(), obj.GetNamespace())
	if err != nil {
		return nil, err
	}
	if m.applied != nil {
		namespace := ""
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			namespace = obj.GetNamespace()
		}
		cached, ok, err := m.applied.get(mapping.Resource, namespace, obj.GetName())
		switch {
		case ok && err == nil && cached == nil:
			return nil, apierrors.NewNotFound(mapping.Resource.GroupResource(), obj.GetName())
		case ok:
			return cached, err
		}
	}
	return ri.Get(ctx, obj.GetName(), metav1.GetOptions{})
}

// NewMember builds the clients for a member cluster.
func NewMember(cfg *rest.Config) (*Member, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 100, 200
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	watchConfig := rest.CopyConfig(cfg)
	watchConfig.Timeout = 0
	watches, err := dynamic.NewForConfig(watchConfig)
	if err != nil {
		return nil, err
	}
	watchKube, err := kubernetes.NewForConfig(watchConfig)
	if err != nil {
		return nil, err
	}
	return &Member{
		dynamic: dyn, kube: kube, namespaces: map[string]bool{}, watches: watches, watchKube: watchKube, stop: make(chan struct{}),
		mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(kube.Discovery())),
	}, nil
}

// current reads the member object id names: its resource, and the object, or nil when the object (or its
// kind) is gone. A read error is returned, never taken for absence.
func (m *Member) current(ctx context.Context, id workv1alpha1.ResourceIdentifier) (dynamic.ResourceInterface, *unstructured.Unstructured, error) {
	ri, _, err := m.resource(schema.GroupVersionKind{Group: id.Group, Version: id.Version, Kind: id.Kind}, id.Namespace)
	if meta.IsNoMatchError(err) {
		return nil, nil, nil // the kind is gone from the member, and its objects with it
	}
	if err != nil {
		return nil, nil, err
	}
	existing, err := ri.Get(ctx, id.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return ri, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return ri, existing, nil
}

// resource returns the client for a kind, reading the member's API anew once when the kind is unknown (a
// CRD may just have been applied).
func (m *Member) resource(gvk schema.GroupVersionKind, namespace string) (dynamic.ResourceInterface, *meta.RESTMapping, error) {
	mapping, err := m.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		m.mapper.Reset()
		mapping, err = m.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return nil, nil, err
	}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		return m.dynamic.Resource(mapping.Resource).Namespace(namespace), mapping, nil
	}
	return m.dynamic.Resource(mapping.Resource), mapping, nil
}

// ensureNamespace creates a namespace in the member when something namespaced goes there and it is missing.
func (m *Member) ensureNamespace(ctx context.Context, name string) error {
	m.mu.Lock()
	known := m.namespaces[name]
	m.mu.Unlock()
	if known || name == "" {
		return nil
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{workv1alpha1.LabelManagedBy: workv1alpha1.ManagedByValue}}}
	if _, err := m.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	m.knowNamespace(name)
	return nil
}

func (m *Member) knowNamespace(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.namespaces[name] = true
}

func (m *Member) forgetNamespace(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.namespaces, name)
}
