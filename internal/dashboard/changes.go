package dashboard

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"

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
// objects' metadata (metadata-only informers), one copy for every page of every person, and only while
// someone is subscribed (a page is open) and for lingerPeriod after the last one left: while nobody looks,
// the hub spends nothing on the dashboard's watches, neither memory nor the decoding of every change of the
// watched kinds once more.
type Notifier struct {
	meta metadata.Interface
	// plan says in which namespace each kind is watched (metav1.NamespaceAll for all of them).
	plan   map[schema.GroupVersionResource]string
	linger time.Duration

	mu   sync.Mutex
	subs map[int]chan Change
	next int
	// done is Start's stop channel: nil before Start, and no watch runs once it is closed.
	done <-chan struct{}
	// running are the watches while they run, nil otherwise; idle stops them once nobody is subscribed.
	running *watches
	idle    *time.Timer
}

// lingerPeriod is how long the watches outlive the last subscriber: a page that loads another page closes
// its stream and opens a new one a moment later, and should find them running.
const lingerPeriod = time.Minute

// watches are one run of the informers.
type watches struct {
	stop   chan struct{}
	synced atomic.Bool
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

// newNotifier plans to watch through meta what allowed says it may.
func newNotifier(meta metadata.Interface, fallbackNamespace string, allowed func(schema.GroupVersionResource, string) (bool, error)) (*Notifier, error) {
	n := &Notifier{meta: meta, plan: map[schema.GroupVersionResource]string{}, linger: lingerPeriod, subs: map[int]chan Change{}}
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
		if ok {
			n.plan[gvr] = namespace
		}
	}
	return n, nil
}

// Start lets the Notifier watch, while anyone is subscribed, until stop closes.
func (n *Notifier) Start(stop <-chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.done = stop
	if len(n.subs) > 0 {
		n.watchLocked()
	}
	go func() {
		<-stop
		n.mu.Lock()
		defer n.mu.Unlock()
		n.stopLocked()
	}()
}

// WaitForSync waits until every informer of the running watches has listed its kind, or stop closes.
func (n *Notifier) WaitForSync(stop <-chan struct{}) {
	n.mu.Lock()
	w := n.running
	n.mu.Unlock()
	if w == nil {
		return
	}
	for _, sync := range w.syncs {
		sync(stop)
	}
}

// Subscribe returns a channel of changes and the function that ends the subscription. A subscriber that
// falls behind misses changes, never blocks the others: any one change makes a page fetch itself anew. The
// first subscriber starts the watches; once they have listed their kinds, every subscriber gets one empty
// Change: what changed before they ran is not known, so each page fetches itself once.
func (n *Notifier) Subscribe() (<-chan Change, func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	id, ch := n.next, make(chan Change, 16)
	n.next++
	n.subs[id] = ch
	if n.idle != nil {
		n.idle.Stop()
		n.idle = nil
	}
	n.watchLocked()
	return ch, func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		delete(n.subs, id)
		if len(n.subs) == 0 && n.running != nil && n.idle == nil {
			n.idle = time.AfterFunc(n.linger, n.stopIfIdle)
		}
	}
}

// watching reports whether the watches run.
func (n *Notifier) watching() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.running != nil
}

// watchLocked starts the informers unless they run already or the Notifier is not started (or stopped).
func (n *Notifier) watchLocked() {
	if n.running != nil || n.done == nil || closed(n.done) {
		return
	}
	w := &watches{stop: make(chan struct{})}
	factories := map[string]metadatainformer.SharedInformerFactory{}
	for gvr, namespace := range n.plan {
		f := factories[namespace]
		if f == nil {
			f = metadatainformer.NewFilteredSharedInformerFactory(n.meta, 0, namespace, nil)
			factories[namespace] = f
		}
		publish := func(obj any) {
			if !w.synced.Load() {
				return // the first list: the empty Change below stands for all of it
			}
			if o, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = o.Obj
			}
			if m, ok := obj.(metav1.Object); ok {
				n.publish(Change{Resource: gvr, Namespace: m.GetNamespace()})
			}
		}
		informer := f.ForResource(gvr).Informer()
		// A change is passed on by kind and namespace alone: managedFields, three quarters of the metadata,
		// need not be kept. Neither call fails on an informer not started yet.
		_ = informer.SetTransform(crcache.TransformStripManagedFields())
		_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    publish,
			UpdateFunc: func(_, obj any) { publish(obj) },
			DeleteFunc: publish,
		})
	}
	for _, f := range factories {
		f.Start(w.stop)
		w.syncs = append(w.syncs, f.WaitForCacheSync)
	}
	n.running = w
	go func() {
		for _, sync := range w.syncs {
			sync(w.stop)
		}
		if !closed(w.stop) {
			w.synced.Store(true)
			n.publish(Change{})
		}
	}()
}

// stopIfIdle stops the watches if nobody subscribed again since the last subscriber left.
func (n *Notifier) stopIfIdle() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.subs) == 0 {
		n.stopLocked()
	}
}

func (n *Notifier) stopLocked() {
	if n.idle != nil {
		n.idle.Stop()
		n.idle = nil
	}
	if n.running != nil {
		close(n.running.stop)
		n.running = nil
	}
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
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
