package execution

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// An executor lists a Work's objects in the Work's status after applying them, and remembers them until then
// (noteApplying). An executor that stops between an apply and that write (a crash, a restart, the agent's
// executor of a new certificate) forgets them, and were the Work to drop such an object meanwhile, nothing
// would let it go. So an executor sweeps each member the first time it serves one of the member's Work
// namespaces: it lists, in every kind the member serves, the objects carrying this hub's mark (mark.go) for
// a Work of that namespace, and lets go (letGo) of those their Work neither lists in its manifests nor in its
// status, as read live from the hub. An object whose Work is gone, being deleted or suspended, or whose
// manifests do not decode, is left alone, as are the kinds the executor may not list: the sweep never takes
// what a Work could still claim. It costs one LIST per kind, answered from the member's watch cache, each
// time an executor starts.

// sweepTimeout bounds one sweep of a member.
const sweepTimeout = 5 * time.Minute

// sweepOnce starts a sweep of the member for the Works of namespace, the first time this executor's member
// serves it; a sweep that fails is tried again with the namespace's next Work. The sweep runs beside the
// applies (the first Work of a started agent waited for it: 0.1 s more on a small member): it only lets go
// of what the Work, read after the object, does not list, which an apply under way cannot add to.
func (e *Executor) sweepOnce(ctx context.Context, m *Member, namespace string) {
	m.mu.Lock()
	if m.swept[namespace] {
		m.mu.Unlock()
		return
	}
	if m.swept == nil {
		m.swept = map[string]bool{}
	}
	m.swept[namespace] = true
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sweepTimeout)
	go func() {
		defer cancel()
		if err := e.sweep(ctx, m, namespace); err != nil {
			log.FromContext(ctx).Error(err, "sweeping the member for objects their Works dropped", "namespace", namespace)
			m.mu.Lock()
			delete(m.swept, namespace)
			m.mu.Unlock()
		}
	}()
}

func (e *Executor) sweep(ctx context.Context, m *Member, namespace string) error {
	lists, err := m.kube.Discovery().ServerPreferredResources()
	var failed *discovery.ErrGroupDiscoveryFailed
	if errors.As(err, &failed) {
		// An aggregated API that does not answer (a metrics server down) is left out, not retried with every Work.
		log.FromContext(ctx).Info("not sweeping the API groups the member does not list", "groups", failed.Groups)
	} else if err != nil {
		return err
	}
	selector := workv1alpha1.LabelManagedBy + "=" + workv1alpha1.ManagedByValue
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") || !slices.Contains(r.Verbs, "delete") {
				continue
			}
			objects, err := m.dynamic.Resource(gv.WithResource(r.Name)).List(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: "0"})
			if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
				continue
			}
			if err != nil {
				return err
			}
			for i := range objects.Items {
				obj := &objects.Items[i]
				obj.SetGroupVersionKind(gv.WithKind(r.Kind))
				if err := e.sweepObject(ctx, m, namespace, obj, r.Name); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// sweepObject lets go of obj when it carries the mark of a Work of namespace that no longer lists it.
func (e *Executor) sweepObject(ctx context.Context, m *Member, namespace string, obj *unstructured.Unstructured, resource string) error {
	work, legacy := markedBy(e.HubID, obj)
	workNamespace, name, _ := strings.Cut(work, "/")
	if work == "" || legacy || workNamespace != namespace {
		return nil // not this hub's, marked by an earlier version (whose status lists it), or another cluster's
	}
	gvk := obj.GroupVersionKind()
	id := workv1alpha1.ResourceIdentifier{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Resource: resource,
		Namespace: obj.GetNamespace(), Name: obj.GetName()}
	key := types.NamespacedName{Namespace: workNamespace, Name: name}
	w := &workv1alpha1.Work{}
	err := e.Hub.Get(ctx, key, w)
	if err == nil && e.claims(w, id) {
		return nil
	}
	if client.IgnoreNotFound(err) != nil {
		return err
	}
	live := e.Works
	if live == nil {
		live = e.Hub
	}
	if err := live.Get(ctx, key, w); err != nil {
		return client.IgnoreNotFound(err) // a Work that is gone left its objects behind on purpose (or was forced)
	}
	if w.DeletionTimestamp != nil || ptr.Deref(w.Spec.SuspendDispatching, false) || e.claims(w, id) {
		return nil
	}
	log.FromContext(ctx).Info("letting go of an object its Work dropped while no executor listed it", "work", key, "object", id)
	return e.letGo(ctx, m, w, id)
}

// claims says whether the Work may still want the object id: its manifests or its status list it, or its
// manifests cannot be read.
func (e *Executor) claims(w *workv1alpha1.Work, id workv1alpha1.ResourceIdentifier) bool {
	manifests, err := decode(w)
	if err != nil {
		return true
	}
	listed := slices.ContainsFunc(manifests, func(obj *unstructured.Unstructured) bool { return sameObject(identifier(obj, 0), id) })
	return listed || slices.ContainsFunc(e.owned(w), func(o workv1alpha1.ResourceIdentifier) bool { return sameObject(o, id) })
}
