package binding

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// Sweeper is the work sweeper ("work-sweeper"). It releases orphaned Works: a Work in a cluster's namespace whose labels
// name no owner, or an owner that does not exist, or one that exists but does not claim it (a binding
// deleted and created again under the same name, AnnotationBindingUID, which does not place its template on
// that cluster: claims). Left alone, such a Work would be applied, and its objects put back, forever: a
// binding force-deleted (its finalizer removed by hand) leaves its Works behind, and whoever may write in a
// cluster's namespace can create one.
//
// Released, not deleted with its objects. Nobody asked for those objects to go: a binding is deleted only
// when its template is (and then its finalizer deletes its Works first) or released (its Works are released
// first); a Work that outlived its binding means that path was cut short, and a hand-made Work was never a
// template's. So an orphan is let go of as a policy release lets go of a binding's Works: marked
// preserveResourcesOnDeletion, then deleted, so that its executor removes its finalizer and leaves the
// member objects running, unmanaged. A Work already being deleted is left to that deletion: whoever deleted
// it decided what becomes of its objects.
//
// Works carry no owner references, even those of ClusterResourceBindings, which could have them (a
// namespaced binding could not: owners cannot be in another namespace). The garbage collector would delete
// a Work whose binding is gone without marking it preserved, and its executor would then delete its objects
// from the member: the deletion without intent this sweeper exists to avoid. And a foreground deletion of a
// binding being released might have the collector delete its Works before the release marks them preserved.
//
// An owner is judged absent only on the API server's word: the cache answers first, and settles only that an
// owner it holds claims the Work. A read error is never taken for absence. The Work is released only as it was
// judged: the patch and the delete carry its resourceVersion, so a Work changed since is judged again.
//
// +kubebuilder:rbac:groups=work.flotilla.io,resources=works,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups=work.flotilla.io,resources=resourcebindings;clusterresourcebindings,verbs=get;list;watch
// +kubebuilder:rbac:groups=multicluster.x-k8s.io,resources=serviceexports,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
type Sweeper struct {
	// Client reads from the cache and writes.
	Client client.Client
	// Reader reads from the API server: only it may say that an owner is gone.
	Reader   client.Reader
	Recorder events.EventRecorder
	// Owners are the kinds of object that write Works.
	Owners []WorkOwner
}

// WorkOwner is a kind of hub object that writes Works and names itself in their labels: the two binding
// kinds, and the kinds of other controllers that the hub hands SetupSweeper (mcs.ConsumerWorks). It is an
// interface so that those controllers need not import this package: the agent links mcs for its
// EndpointSlice collector, and no binding controller.
type WorkOwner interface {
	// Kind names the kind in events.
	Kind() string
	// New returns an empty object of the kind.
	New() client.Object
	// Of returns the key of the owner a Work's labels name, and false when they name none of this kind.
	Of(w *workv1alpha1.Work) (client.ObjectKey, bool)
	// Labels are the labels an owner gives its Works.
	Labels(owner client.Object) map[string]string
	// Owns says whether owner, which exists and is named by the Work's labels, claims the Work.
	Owns(owner client.Object, w *workv1alpha1.Work) bool
}

// bindingOwner is a binding kind, ResourceBinding (namespaced) or ClusterResourceBinding, naming itself by
// the binding labels.
type bindingOwner struct{ namespaced bool }

var bindingOwners = []WorkOwner{bindingOwner{namespaced: true}, bindingOwner{namespaced: false}}

func (o bindingOwner) Kind() string {
	if o.namespaced {
		return "ResourceBinding"
	}
	return "ClusterResourceBinding"
}

func (o bindingOwner) New() client.Object {
	if o.namespaced {
		return &workv1alpha1.ResourceBinding{}
	}
	return &workv1alpha1.ClusterResourceBinding{}
}

func (o bindingOwner) Of(w *workv1alpha1.Work) (client.ObjectKey, bool) {
	req, ok := bindingOf(w, o.namespaced)
	return req.NamespacedName, ok
}

func (bindingOwner) Labels(b client.Object) map[string]string { return workLabels(b) }

func (bindingOwner) Owns(b client.Object, w *workv1alpha1.Work) bool { return claims(b, w) }

// sweepManager is the field manager of what the sweeper writes.
var sweepManager = workv1alpha1.ControllerFieldManager("work-sweeper")

// ReasonOrphanReleased is the reason of the event on a Work the sweeper released.
const ReasonOrphanReleased = "OrphanReleased"

// SetupSweeper registers the work sweeper for the Works of bindings and of the other owners given. It is
// woken by a new Work, by a Work whose labels or binding UID changed, and by the deletion of an owner; every
// Work is judged once when it starts.
func SetupSweeper(mgr ctrl.Manager, owners ...WorkOwner) error {
	s := &Sweeper{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("flotilla-work-sweeper"),
		Owners: append(slices.Clone(bindingOwners), owners...)}
	b := ctrl.NewControllerManagedBy(mgr).Named("work-sweeper").For(&workv1alpha1.Work{}, builder.WithPredicates(sweeperWakes))
	deleted := predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
	for _, o := range s.Owners {
		b = b.Watches(o.New(), handler.EnqueueRequestsFromMapFunc(s.worksOf(o)), builder.WithPredicates(deleted))
	}
	return b.Complete(s)
}

// sweeperWakes passes the Work events that can make a Work an orphan, or show one: its creation, and a
// change of its labels or of the binding UID it records.
var sweeperWakes = predicate.Funcs{
	CreateFunc: func(e event.CreateEvent) bool { return sweepable(e.Object) },
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld, e.ObjectNew
		return sweepable(n) && (!maps.Equal(o.GetLabels(), n.GetLabels()) ||
			o.GetAnnotations()[workv1alpha1.AnnotationBindingUID] != n.GetAnnotations()[workv1alpha1.AnnotationBindingUID])
	},
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// sweepable says whether the sweeper judges a Work: one in a cluster's namespace (no executor applies any
// other) that is not being deleted already.
func sweepable(w client.Object) bool {
	_, inCluster := clusterv1alpha1.ClusterOfNamespace(w.GetNamespace())
	return inCluster && w.GetDeletionTimestamp() == nil
}

// worksOf maps a deleted owner to the Works it leaves behind, as the cache holds them. A Work the cache does
// not hold yet is judged when its creation arrives.
func (s *Sweeper) worksOf(o WorkOwner) handler.MapFunc {
	return func(ctx context.Context, owner client.Object) []reconcile.Request {
		works := &workv1alpha1.WorkList{}
		if err := s.Client.List(ctx, works, client.MatchingLabels(o.Labels(owner))); err != nil {
			return nil
		}
		var out []reconcile.Request
		for i := range works.Items {
			if sweepable(&works.Items[i]) {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&works.Items[i])})
			}
		}
		return out
	}
}

// Reconcile releases one Work when it is an orphan.
func (s *Sweeper) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	w := &workv1alpha1.Work{}
	if err := s.Client.Get(ctx, req.NamespacedName, w); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !sweepable(w) {
		return ctrl.Result{}, nil
	}
	readFrom := func(c client.Reader, opts ...client.GetOption) func(WorkOwner, client.ObjectKey) (client.Object, error) {
		return func(o WorkOwner, key client.ObjectKey) (client.Object, error) {
			obj := o.New()
			return obj, c.Get(ctx, key, obj, opts...)
		}
	}
	// The cache settles the common case, an owner it holds that wrote the Work, without a request. The owner
	// is only read, so the cache's own copy serves: a binding on 1,000 clusters is a quarter of a megabyte, and
	// copying it for each of its Works took more CPU than the rest of the sweeper.
	if why, err := verdict(w, s.Owners, readFrom(s.Client, client.UnsafeDisableDeepCopy)); err == nil && why == "" {
		return ctrl.Result{}, nil
	}
	why, err := verdict(w, s.Owners, readFrom(s.Reader))
	if err != nil || why == "" {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, s.release(ctx, w, why)
}

// verdict says why a Work is an orphan, or "" when it is not: its labels name no owner of a kind in owners,
// or read finds the owner they name absent (NotFound) or finds another object of that name. Any other error
// of read is returned: an error is never taken for absence.
func verdict(w *workv1alpha1.Work, owners []WorkOwner, read func(WorkOwner, client.ObjectKey) (client.Object, error)) (string, error) {
	for _, o := range owners {
		key, ok := o.Of(w)
		if !ok {
			continue
		}
		name := key.Name
		if key.Namespace != "" {
			name = key.Namespace + "/" + key.Name
		}
		owner, err := read(o, key)
		switch {
		case apierrors.IsNotFound(err):
			return fmt.Sprintf("its %s %s does not exist", o.Kind(), name), nil
		case err != nil:
			return "", err
		case !o.Owns(owner, w):
			return fmt.Sprintf("its %s %s was deleted (UID %s) and created again (UID %s), and the new one does not claim it",
				o.Kind(), name, w.Annotations[workv1alpha1.AnnotationBindingUID], owner.GetUID()), nil
		}
		return "", nil
	}
	return fmt.Sprintf("its labels name no binding (%s, %s)", workv1alpha1.LabelBindingNamespace, workv1alpha1.LabelBindingName), nil
}

// release lets go of an orphaned Work as a policy release does: it is marked preserveResourcesOnDeletion,
// then deleted, so that its executor removes its finalizer and leaves the member objects in place. Both
// writes carry the resourceVersion of the Work as judged: a conflict (the Work changed since) is returned,
// and the Work judged again.
func (s *Sweeper) release(ctx context.Context, w *workv1alpha1.Work, why string) error {
	if !ptr.Deref(w.Spec.PreserveResourcesOnDeletion, false) {
		patch := client.MergeFromWithOptions(w.DeepCopy(), client.MergeFromWithOptimisticLock{})
		w.Spec.PreserveResourcesOnDeletion = ptr.To(true)
		if err := s.Client.Patch(ctx, w, patch, client.FieldOwner(sweepManager)); err != nil {
			return client.IgnoreNotFound(err) // never deleted before it lets go of its objects
		}
	}
	err := s.Client.Delete(ctx, w, client.Preconditions{UID: ptr.To(w.UID), ResourceVersion: ptr.To(w.ResourceVersion)})
	if err != nil {
		return client.IgnoreNotFound(err)
	}
	ctrl.LoggerFrom(ctx).Info("released an orphaned Work", "reason", why)
	s.Recorder.Eventf(w, nil, corev1.EventTypeWarning, ReasonOrphanReleased, "Release",
		"Released: %s. Its objects stay in the member, no longer managed by Flotilla.", why)
	return nil
}
