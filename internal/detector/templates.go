package detector

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/flotilla-io/flotilla/internal/metrics"
)

// watchSyncTimeout bounds the wait for a new watch's first list: a kind the hub serves but cannot list (an
// aggregated API that is down) fails the policy pass, which is tried again, instead of holding it.
const watchSyncTimeout = time.Minute

// Templates are the hub's watches of templates, and how its controllers read and follow them: one watch per
// kind and namespace, or one for every namespace, each with a cache of its own that is stopped with it. The
// detector decides what is watched (watches.go): where policies select a kind, and where bindings of it
// exist. A read that no watch covers goes to the API server, so a template is never taken for deleted
// because it is not, or no longer, watched.
//
// Why not the manager's cache: it watches a kind in every namespace or in a fixed set, its RemoveInformer
// would also cut the other controllers' handlers on that informer, and the next read of the kind through
// the manager's client would start it again in every namespace.
type Templates struct {
	config  *rest.Config
	options cache.Options
	live    client.Reader

	// started is closed once the manager started Templates; ctx, the manager's, then bounds every watch.
	started chan struct{}
	ctx     context.Context
	// ready is closed after the first change of the watches, or at the start when nothing will change them
	// (driven is false: the detector does not run). Until then a read no watch covers waits, instead of
	// going to the API server template by template while the hub starts.
	ready     chan struct{}
	readyOnce sync.Once
	driven    bool
	// everyReplica runs the watches on every hub replica, not only the leader (NewTemplates).
	everyReplica bool

	// setMu makes one change of the watches at a time.
	setMu sync.Mutex

	mu sync.Mutex
	// watches holds the running watches by kind and namespace ("": every namespace).
	watches     map[schema.GroupKind]map[string]*templateWatch
	subscribers []func(cache.Informer, schema.GroupVersionKind) error
}

// templateWatch is one running watch: a kind, under one version, in one namespace or all of them ("").
type templateWatch struct {
	gvk       schema.GroupVersionKind
	namespace string
	cache     cache.Cache
	informer  cache.Informer
	stop      context.CancelFunc
}

// scope is where a kind's templates are watched, under the version the hub prefers for it: in some
// namespaces, or in every one (the namespace "", alone).
type scope struct {
	gvk        schema.GroupVersionKind
	namespaces sets.Set[string]
}

// covers reports whether s takes in namespace ("" for a cluster-scoped template).
func (s scope) covers(namespace string) bool {
	return s.namespaces.Has("") || s.namespaces.Has(namespace)
}

// NewTemplates returns the hub's template watches, added to mgr: they run while this hub leads, or on every
// replica when everyReplica (a sharded hub, whose replicas all render Works). On a replica that does not
// lead, the watches are those its bindings need (the detector's "detector-watches" controller runs there
// too), since only the leader follows policies.
func NewTemplates(mgr ctrl.Manager, everyReplica bool) (*Templates, error) {
	t := &Templates{config: mgr.GetConfig(), live: mgr.GetAPIReader(), started: make(chan struct{}), ready: make(chan struct{}), everyReplica: everyReplica,
		watches: map[schema.GroupKind]map[string]*templateWatch{},
		options: cache.Options{HTTPClient: mgr.GetHTTPClient(), Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
			DefaultTransform: cache.TransformStripManagedFields(),
			// A read of another kind or version must not start a watch nobody stops.
			ReaderFailOnMissingInformer: true}}
	return t, mgr.Add(t)
}

// NeedLeaderElection says whether the watches run only while this hub leads.
func (t *Templates) NeedLeaderElection() bool { return !t.everyReplica }

// Start runs the watches until ctx ends.
func (t *Templates) Start(ctx context.Context) error {
	t.ctx = ctx
	close(t.started)
	if !t.driven {
		t.readyOnce.Do(func() { close(t.ready) })
	}
	<-ctx.Done()
	t.mu.Lock()
	defer t.mu.Unlock()
	for gk, byNamespace := range t.watches {
		for namespace, w := range byNamespace {
			w.stop()
			metrics.TemplateWatches.DeleteLabelValues(gk.String(), namespace)
		}
	}
	t.watches = map[schema.GroupKind]map[string]*templateWatch{}
	return nil
}

// Get reads a template from the watch that covers it, or from the API server when none does.
func (t *Templates) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return t.reader(ctx, obj.GetObjectKind().GroupVersionKind(), key.Namespace).Get(ctx, key, obj, opts...)
}

// List lists templates from the watch that covers the namespace asked for (all of them when none is), or
// from the API server when none does.
func (t *Templates) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	gvk := list.GetObjectKind().GroupVersionKind()
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	return t.reader(ctx, gvk, (&client.ListOptions{}).ApplyOptions(opts).Namespace).List(ctx, list, opts...)
}

// reader is the cache of the watch that covers gvk in namespace, or the API server.
func (t *Templates) reader(ctx context.Context, gvk schema.GroupVersionKind, namespace string) client.Reader {
	if w := t.covering(gvk, namespace); w != nil {
		return w.cache
	}
	select {
	case <-t.ready:
	case <-ctx.Done():
		return t.live // which fails with ctx
	}
	if w := t.covering(gvk, namespace); w != nil {
		return w.cache
	}
	return t.live
}

// covering is the watch of gvk that holds every template of namespace ("": of every namespace), or nil.
func (t *Templates) covering(gvk schema.GroupVersionKind, namespace string) *templateWatch {
	t.mu.Lock()
	defer t.mu.Unlock()
	byNamespace := t.watches[gvk.GroupKind()]
	w := byNamespace[""]
	if w == nil && namespace != "" {
		w = byNamespace[namespace]
	}
	if w == nil || w.gvk != gvk {
		return nil
	}
	return w
}

// WatchTemplates hands c the events of every template the hub watches, from the time c starts, through the
// handler events makes for the version a watch uses. A watch started later replays the templates it holds
// as creations in its initial list (event.CreateEvent.IsInInitialList).
func WatchTemplates[R comparable](t *Templates, c controller.TypedController[R], events func(schema.GroupVersionKind) handler.TypedEventHandler[*unstructured.Unstructured, R]) error {
	return c.Watch(source.TypedFunc[R](func(ctx context.Context, q workqueue.TypedRateLimitingInterface[R]) error {
		return t.subscribe(func(i cache.Informer, gvk schema.GroupVersionKind) error {
			return (&source.TypedInformer[*unstructured.Unstructured, R]{Informer: i, Handler: events(gvk)}).Start(ctx, q)
		})
	}))
}

// subscribe adds s to what every watch, running or to come, is handed to.
func (t *Templates) subscribe(s func(cache.Informer, schema.GroupVersionKind) error) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.subscribers = append(t.subscribers, s)
	var errs []error
	for _, byNamespace := range t.watches {
		for _, w := range byNamespace {
			errs = append(errs, s(w.informer, w.gvk))
		}
	}
	return errors.Join(errs...)
}

// set makes the running watches those of want: it starts the missing ones, each holding its kind's templates
// before it takes over the reads, and then stops those no longer wanted.
func (t *Templates) set(ctx context.Context, want map[schema.GroupKind]scope) error {
	select {
	case <-t.started:
	case <-ctx.Done():
		return ctx.Err()
	}
	t.setMu.Lock()
	defer t.setMu.Unlock()
	defer t.readyOnce.Do(func() { close(t.ready) })
	var errs []error
	for gk, s := range want {
		for namespace := range s.namespaces {
			if w := t.running(gk, namespace); w != nil && w.gvk == s.gvk {
				continue
			}
			w, err := t.start(ctx, s.gvk, namespace)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			t.install(ctx, gk, namespace, w)
		}
	}
	t.mu.Lock()
	var stopped []*templateWatch
	for gk, byNamespace := range t.watches {
		for namespace, w := range byNamespace {
			if s, ok := want[gk]; !ok || !s.namespaces.Has(namespace) {
				delete(byNamespace, namespace)
				stopped = append(stopped, w)
				metrics.TemplateWatches.DeleteLabelValues(gk.String(), namespace)
			}
		}
		if len(byNamespace) == 0 {
			delete(t.watches, gk)
		}
	}
	t.mu.Unlock()
	for _, w := range stopped {
		w.stop()
		ctrl.LoggerFrom(ctx).Info("stopped watching templates", "kind", w.gvk.GroupKind(), "namespace", w.where())
	}
	return errors.Join(errs...)
}

func (t *Templates) running(gk schema.GroupKind, namespace string) *templateWatch {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.watches[gk][namespace]
}

// start starts a watch of gvk in namespace ("": every namespace) and waits until it holds the templates.
func (t *Templates) start(ctx context.Context, gvk schema.GroupVersionKind, namespace string) (*templateWatch, error) {
	options := t.options
	if namespace != "" {
		options.DefaultNamespaces = map[string]cache.Config{namespace: {}}
	}
	c, err := cache.New(t.config, options)
	if err != nil {
		return nil, fmt.Errorf("watching %s: %w", gvk, err)
	}
	watchCtx, stop := context.WithCancel(t.ctx)
	go func() {
		if err := c.Start(watchCtx); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "template watch ended", "kind", gvk.GroupKind(), "namespace", namespace)
		}
	}()
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	syncCtx, cancel := context.WithTimeout(ctx, watchSyncTimeout)
	defer cancel()
	i, err := c.GetInformer(syncCtx, obj)
	if err == nil && !c.WaitForCacheSync(syncCtx) {
		err = errors.New("its first list did not finish")
	}
	if err != nil {
		stop()
		return nil, fmt.Errorf("watching %s: %w", gvk, err)
	}
	return &templateWatch{gvk: gvk, namespace: namespace, cache: c, informer: i, stop: stop}, nil
}

// install makes w the watch of gk in namespace, handed to every subscriber, in place of one under another
// version, which it stops.
func (t *Templates) install(ctx context.Context, gk schema.GroupKind, namespace string, w *templateWatch) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.subscribers {
		if err := s(w.informer, w.gvk); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "handing a template watch to a controller", "kind", gk, "namespace", namespace)
		}
	}
	if t.watches[gk] == nil {
		t.watches[gk] = map[string]*templateWatch{}
	}
	if old := t.watches[gk][namespace]; old != nil {
		old.stop()
	}
	t.watches[gk][namespace] = w
	metrics.TemplateWatches.WithLabelValues(gk.String(), namespace).Set(1)
	ctrl.LoggerFrom(ctx).Info("watching templates", "kind", gk, "version", w.gvk.Version, "namespace", w.where())
}

// where names where w watches, for logs.
func (w *templateWatch) where() string {
	if w.namespace == "" {
		return "(every namespace)"
	}
	return w.namespace
}
