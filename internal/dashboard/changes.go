package dashboard

import (
	"context"
	"fmt"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"

	addonv1alpha1 "github.com/flotilla-io/flotilla/api/addon/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// Change says that an object of a kind changed, and in which namespace; never what changed.
type Change struct {
	Resource  schema.GroupVersionResource
	Namespace string // empty for cluster-scoped kinds
}

// watched are the kinds whose changes refresh the pages, and whether they are namespaced.
var watched = map[schema.GroupVersionResource]bool{
	clusterv1alpha1.GroupVersion.WithResource("clusters"):                  false,
	workv1alpha1.GroupVersion.WithResource("clusterresourcebindings"):      false,
	workv1alpha1.GroupVersion.WithResource("resourcebindings"):             true,
	workv1alpha1.GroupVersion.WithResource("works"):                        true,
	policyv1alpha1.GroupVersion.WithResource("clusterpropagationpolicies"): false,
	policyv1alpha1.GroupVersion.WithResource("propagationpolicies"):        true,
	addonv1alpha1.GroupVersion.WithResource("clusteraddons"):               true,
}

// Watched returns the kinds the Notifier keeps the metadata of, for measurements of its size.
func Watched() []schema.GroupVersionResource {
	out := make([]schema.GroupVersionResource, 0, len(watched))
	for gvr := range watched {
		out = append(out, gvr)
	}
	return out
}

// Notifier turns changes of the watched kinds into Change messages for its subscribers. It keeps only the
// objects' metadata (metadata-only informers), one copy for every page of every person.
type Notifier struct {
	mu     sync.Mutex
	subs   map[int]chan Change
	next   int
	starts []func(<-chan struct{})
	syncs  []func(<-chan struct{}) map[schema.GroupVersionResource]bool
}

// NewNotifier watches with cfg's credentials every kind they may list and watch in every namespace; a
// namespaced kind they may not, only in fallbackNamespace (when set). A person limited to one namespace runs
// flotilla dashboard with --namespace (or a kubeconfig context that names it).
func NewNotifier(ctx context.Context, cfg *rest.Config, fallbackNamespace string) (*Notifier, error) {
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return newNotifier(meta, fallbackNamespace, func(gvr schema.GroupVersionResource, namespace string) (bool, error) {
		return mayWatch(ctx, kube, gvr, namespace)
	})
}

// newNotifier watches through meta what allowed says it may.
func newNotifier(meta metadata.Interface, fallbackNamespace string, allowed func(schema.GroupVersionResource, string) (bool, error)) (*Notifier, error) {
	n := &Notifier{subs: map[int]chan Change{}}
	factories := map[string]metadatainformer.SharedInformerFactory{}
	for gvr, namespaced := range watched {
		namespace := metav1.NamespaceAll
		ok, err := allowed(gvr, namespace)
		if err != nil {
			return nil, err
		}
		if !ok && namespaced && fallbackNamespace != "" {
			namespace = fallbackNamespace
			if ok, err = allowed(gvr, namespace); err != nil {
				return nil, err
			}
		}
		if !ok {
			continue
		}
		f := factories[namespace]
		if f == nil {
			f = metadatainformer.NewFilteredSharedInformerFactory(meta, 0, namespace, nil)
			factories[namespace] = f
			n.starts = append(n.starts, f.Start)
			n.syncs = append(n.syncs, f.WaitForCacheSync)
		}
		publish := func(obj any) {
			if o, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = o.Obj
			}
			m, ok := obj.(metav1.Object)
			if !ok {
				return
			}
			n.publish(Change{Resource: gvr, Namespace: m.GetNamespace()})
		}
		informer := f.ForResource(gvr).Informer()
		// A change is passed on by kind and namespace alone: managedFields, three quarters of the metadata,
		// need not be kept.
		if err := informer.SetTransform(crcache.TransformStripManagedFields()); err != nil {
			return nil, err
		}
		if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    publish,
			UpdateFunc: func(_, obj any) { publish(obj) },
			DeleteFunc: publish,
		}); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// mayWatch asks the hub whether cfg's user may list and watch gvr in namespace.
func mayWatch(ctx context.Context, kube kubernetes.Interface, gvr schema.GroupVersionResource, namespace string) (bool, error) {
	for _, verb := range []string{"list", "watch"} {
		review, err := kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: namespace, Verb: verb, Group: gvr.Group, Resource: gvr.Resource}}}, metav1.CreateOptions{})
		if err != nil {
			return false, fmt.Errorf("asking the hub what the dashboard may watch: %w", err)
		}
		if !review.Status.Allowed {
			return false, nil
		}
	}
	return true, nil
}

// Start runs the informers until stop closes.
func (n *Notifier) Start(stop <-chan struct{}) {
	for _, start := range n.starts {
		start(stop)
	}
}

// WaitForSync waits until every informer has listed its kind, or stop closes.
func (n *Notifier) WaitForSync(stop <-chan struct{}) {
	for _, sync := range n.syncs {
		sync(stop)
	}
}

// Subscribe returns a channel of changes and the function that ends the subscription. A subscriber that
// falls behind misses changes, never blocks the others: any one change makes a page fetch itself anew.
func (n *Notifier) Subscribe() (<-chan Change, func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	id, ch := n.next, make(chan Change, 16)
	n.next++
	n.subs[id] = ch
	return ch, func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		delete(n.subs, id)
	}
}

func (n *Notifier) publish(c Change) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, ch := range n.subs {
		select {
		case ch <- c:
		default:
		}
	}
}
