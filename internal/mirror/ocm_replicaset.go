package mirror

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	ocmworkv1 "github.com/flotilla-io/flotilla/api/ocm/work/v1"
	ocmworkv1alpha1 "github.com/flotilla-io/flotilla/api/ocm/work/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/rollout"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

// +kubebuilder:rbac:groups=work.open-cluster-management.io,resources=manifestworkreplicasets,verbs=get;list;watch;update
// +kubebuilder:rbac:groups=work.open-cluster-management.io,resources=manifestworkreplicasets/status,verbs=update;patch
// +kubebuilder:rbac:groups=work.open-cluster-management.io,resources=manifestworks,verbs=create;delete

// AnnotationTemplateHash on a ManifestWork of a ManifestWorkReplicaSet is the hash of the template it was
// written from: the rollout's revision of that cluster.
const AnnotationTemplateHash = "mirror.flotilla.io/template-hash"

// replicaSetManager is the field manager of a ManifestWorkReplicaSet's status.
const replicaSetManager = "flotilla-manifestworkreplicaset"

// ReplicaSets keeps, for each ManifestWorkReplicaSet, one ManifestWork of its template in the namespace of
// every cluster its placements decide on (OCM's convention: the namespace named after the cluster), and rolls
// a template change out per placement with rollout.Plan, as the add-on controller does for add-ons: a cluster
// the rollout has not reached keeps its ManifestWork; a cluster without one gets the current template at
// once. Whether a cluster runs the new template, and is healthy, is read from the Work the ManifestWork is
// mirrored onto, not from the ManifestWork's copied (possibly stale) conditions. A cluster no placement
// decides on any more loses its ManifestWork, but only when every placement's decision is settled; the
// ManifestWorks, in other namespaces, are deleted with the ManifestWorkReplicaSet through its finalizer.
type ReplicaSets struct {
	Client client.Client
	// Reader reads the previous rollouts from the API server: a wave decided on a status the cache has not
	// caught up with would start again.
	Reader   client.Reader
	Recorder events.EventRecorder
	now      func() time.Time
}

// SetupReplicaSets registers ReplicaSets with the manager.
func SetupReplicaSets(mgr ctrl.Manager) error {
	r := &ReplicaSets{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("flotilla-manifestworkreplicaset"), now: time.Now}
	return ctrl.NewControllerManagedBy(mgr).Named("ocm-manifestworkreplicaset").
		For(&ocmworkv1alpha1.ManifestWorkReplicaSet{}).
		Watches(&ocmworkv1.ManifestWork{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			return replicaSetOf(o.GetLabels())
		})).
		Watches(&workv1alpha1.Work{}, handler.EnqueueRequestsFromMapFunc(r.replicaSetOfWork)).
		Watches(&clusterv1alpha1.PlacementDecision{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return r.replicaSetsOfPlacement(ctx, o.GetNamespace(), o.GetLabels()[clusterv1alpha1.LabelPlacement])
		})).
		Watches(&clusterv1alpha1.Placement{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return r.replicaSetsOfPlacement(ctx, o.GetNamespace(), o.GetName())
		})).
		Complete(r)
}

// replicaSetLabel is the value of a ManifestWork's LabelReplicaSet.
func replicaSetLabel(rs *ocmworkv1alpha1.ManifestWorkReplicaSet) string {
	return rs.Namespace + "." + rs.Name
}

func replicaSetOf(labels map[string]string) []reconcile.Request {
	ns, name, ok := strings.Cut(labels[ocmworkv1alpha1.LabelReplicaSet], ".")
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
}

// replicaSetOfWork is the ManifestWorkReplicaSet of the ManifestWork a Work mirrors.
func (r *ReplicaSets) replicaSetOfWork(ctx context.Context, o client.Object) []reconcile.Request {
	key, ok := ManifestWorks{}.Of(o.(*workv1alpha1.Work))
	if !ok {
		return nil
	}
	mw := &ocmworkv1.ManifestWork{}
	if err := r.Client.Get(ctx, key, mw); err != nil {
		return nil
	}
	return replicaSetOf(mw.Labels)
}

func (r *ReplicaSets) replicaSetsOfPlacement(ctx context.Context, namespace, placement string) []reconcile.Request {
	list := &ocmworkv1alpha1.ManifestWorkReplicaSetList{}
	if placement == "" || r.Client.List(ctx, list, client.InNamespace(namespace)) != nil {
		return nil
	}
	var out []reconcile.Request
	for _, rs := range list.Items {
		if slices.ContainsFunc(rs.Spec.PlacementRefs, func(p ocmworkv1alpha1.LocalPlacementReference) bool { return p.Name == placement }) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&rs)})
		}
	}
	return out
}

// Reconcile writes, rolls out and deletes a ManifestWorkReplicaSet's ManifestWorks and reports them.
func (r *ReplicaSets) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rs := &ocmworkv1alpha1.ManifestWorkReplicaSet{}
	if err := r.Client.Get(ctx, req.NamespacedName, rs); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	works, err := r.manifestWorks(ctx, rs)
	if err != nil {
		return ctrl.Result{}, err
	}
	if rs.DeletionTimestamp != nil {
		return ctrl.Result{}, r.cleanUp(ctx, rs, works)
	}
	if !controllerutil.ContainsFinalizer(rs, ocmworkv1alpha1.FinalizerCleanup) {
		controllerutil.AddFinalizer(rs, ocmworkv1alpha1.FinalizerCleanup)
		if err := r.Client.Update(ctx, rs); err != nil {
			return ctrl.Result{}, err
		}
	}
	placements := make([]*replicaPlacement, 0, len(rs.Spec.PlacementRefs))
	for _, ref := range rs.Spec.PlacementRefs {
		p, err := rollout.ReadPlacement(ctx, r.Client, rs.Namespace, ref.Name)
		if err != nil {
			return ctrl.Result{}, err
		}
		placements = append(placements, &replicaPlacement{ref: ref, Placed: p})
	}
	hash, err := templateHash(&rs.Spec.ManifestWorkTemplate)
	if err != nil {
		return ctrl.Result{}, err
	}
	d, err := r.roll(ctx, rs, placements, works, hash)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.write(ctx, rs, placements, works, d, hash); err != nil {
		return ctrl.Result{}, err
	}
	hold, err := r.deleteUnplaced(ctx, rs, placements, works)
	if err != nil {
		return ctrl.Result{}, err
	}
	// Read again: what was just written counts.
	if works, err = r.manifestWorks(ctx, rs); err != nil {
		return ctrl.Result{}, err
	}
	status := replicaSetStatus(rs, placements, works, d, hold)
	if err := scheme.ApplyStatus(ctx, r.Client, rs, replicaSetManager, &status); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: d.requeue}, nil
}

// replicaPlacement is one placementRef and what its Placement decides.
type replicaPlacement struct {
	ref ocmworkv1alpha1.LocalPlacementReference
	*rollout.Placed
	// clusters are the clusters this placement rolls out to, in order: those it decides on that no earlier
	// placementRef decides on.
	clusters []string
	// invalid says why its rollout strategy cannot be read ("" when it can).
	invalid string
}

// manifestWorks are the ManifestWorks a ManifestWorkReplicaSet wrote, by cluster (their namespace).
func (r *ReplicaSets) manifestWorks(ctx context.Context, rs *ocmworkv1alpha1.ManifestWorkReplicaSet) (map[string]*ocmworkv1.ManifestWork, error) {
	list := &ocmworkv1.ManifestWorkList{}
	if err := r.Client.List(ctx, list, client.MatchingLabels{ocmworkv1alpha1.LabelReplicaSet: replicaSetLabel(rs)}); err != nil {
		return nil, err
	}
	out := map[string]*ocmworkv1.ManifestWork{}
	for i := range list.Items {
		if mw := &list.Items[i]; mw.Name == rs.Name {
			out[mw.Namespace] = mw
		}
	}
	return out, nil
}

// cleanUp deletes a deleted ManifestWorkReplicaSet's ManifestWorks, and lets it go once none is left.
func (r *ReplicaSets) cleanUp(ctx context.Context, rs *ocmworkv1alpha1.ManifestWorkReplicaSet, works map[string]*ocmworkv1.ManifestWork) error {
	if !controllerutil.ContainsFinalizer(rs, ocmworkv1alpha1.FinalizerCleanup) {
		return nil
	}
	for _, mw := range works {
		if mw.DeletionTimestamp != nil {
			continue
		}
		if err := r.Client.Delete(ctx, mw, client.Preconditions{UID: &mw.UID}); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	if len(works) > 0 {
		return nil // the ManifestWorks' deletion wakes this again
	}
	controllerutil.RemoveFinalizer(rs, ocmworkv1alpha1.FinalizerCleanup)
	return r.Client.Update(ctx, rs)
}

// templateHash names a template: the rollout's target revision.
func templateHash(spec *ocmworkv1.ManifestWorkSpec) (string, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8]), nil
}

// write creates the ManifestWork of every decided cluster that has none, with the current template, and
// sends the template to the clusters the rollouts put on it.
func (r *ReplicaSets) write(ctx context.Context, rs *ocmworkv1alpha1.ManifestWorkReplicaSet, placements []*replicaPlacement,
	works map[string]*ocmworkv1.ManifestWork, d replicaDecision, hash string) error {
	for _, p := range placements {
		for _, cluster := range p.clusters {
			mw := works[cluster]
			switch {
			case mw == nil:
				mw = &ocmworkv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: rs.Name,
					Labels:      map[string]string{ocmworkv1alpha1.LabelReplicaSet: replicaSetLabel(rs)},
					Annotations: map[string]string{AnnotationTemplateHash: hash}}, Spec: *rs.Spec.ManifestWorkTemplate.DeepCopy()}
				if err := r.Client.Create(ctx, mw); err != nil {
					return fmt.Errorf("creating the ManifestWork of cluster %s: %w", cluster, err)
				}
				works[cluster] = mw
			// Compared by the hash it was written from: its spec as read back carries the API server's defaults.
			case mw.DeletionTimestamp == nil && d.onTarget[cluster] && mw.Annotations[AnnotationTemplateHash] != hash:
				mw = mw.DeepCopy()
				mw.Spec = *rs.Spec.ManifestWorkTemplate.DeepCopy()
				metav1.SetMetaDataAnnotation(&mw.ObjectMeta, AnnotationTemplateHash, hash)
				if err := r.Client.Update(ctx, mw); err != nil {
					return fmt.Errorf("updating the ManifestWork of cluster %s: %w", cluster, err)
				}
				works[cluster] = mw
			}
		}
	}
	return nil
}

// deleteUnplaced deletes the ManifestWorks of clusters no placement decides on any more: the user's
// placement change, which each ManifestWork's deleteOption carries out in its member. It deletes nothing
// while a placement's decision is not settled, and returns what holds deletions back ("" when nothing does).
func (r *ReplicaSets) deleteUnplaced(ctx context.Context, rs *ocmworkv1alpha1.ManifestWorkReplicaSet, placements []*replicaPlacement,
	works map[string]*ocmworkv1.ManifestWork) (string, error) {
	for _, p := range placements {
		if !p.Settled {
			return p.Why, nil
		}
	}
	var errs []error
	for cluster, mw := range works {
		if mw.DeletionTimestamp != nil || slices.ContainsFunc(placements, func(p *replicaPlacement) bool { return p.Decides(cluster) }) {
			continue
		}
		if err := r.Client.Delete(ctx, mw, client.Preconditions{UID: &mw.UID}); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting the ManifestWork of cluster %s: %w", cluster, err))
			continue
		}
		delete(works, cluster)
		r.Recorder.Eventf(rs, nil, corev1.EventTypeNormal, "ManifestWorkDeleted", "Place", "cluster %s: no placement decides on it any more", cluster)
	}
	return "", errors.Join(errs...)
}

// twin is the Work a ManifestWork is mirrored onto (nil when there is none yet).
func (r *ReplicaSets) twin(ctx context.Context, cluster, name string) (*workv1alpha1.Work, error) {
	w := &workv1alpha1.Work{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: clusterNamespaceOf(cluster), Name: name}, w)
	if err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return w, nil
}
