package execution

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// releaseObject lets go of a member object of the Work without deleting it (the Work preserves its objects,
// or its cluster leaves the hub keeping them): an object that carries the Work's mark of this hub loses every
// label and annotation of Flotilla's (workv1alpha1.KeyPrefix), so it is plainly the member's own from then
// on. A patch removes only those keys, on the object whose mark was checked (its UID); anything else on the
// object stays as it is. An object another Work, another hub or nobody marked is left alone. A read error is
// returned, never taken for the object's absence.
func (e *Executor) releaseObject(ctx context.Context, m *Member, w *workv1alpha1.Work, id workv1alpha1.ResourceIdentifier) error {
	ri, existing, err := m.current(ctx, id)
	if err != nil || existing == nil {
		return err
	}
	if !owns(e.HubID, w, existing) {
		return nil
	}
	patch, err := unmarkPatch(existing)
	if err != nil || patch == nil {
		return err
	}
	_, err = ri.Patch(ctx, id.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: workv1alpha1.FieldManager})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("releasing %s %s/%s: %w", id.Kind, id.Namespace, id.Name, err)
	}
	return nil
}

// unmarkPatch is the JSON merge patch that removes Flotilla's labels and annotations from obj, with obj's UID
// as a precondition; nil when obj carries none.
func unmarkPatch(obj *unstructured.Unstructured) ([]byte, error) {
	labels, annotations := flotillaKeys(obj)
	if len(labels) == 0 && len(annotations) == 0 {
		return nil, nil
	}
	metadata := map[string]any{"uid": obj.GetUID()}
	for field, keys := range map[string][]string{"labels": labels, "annotations": annotations} {
		if len(keys) == 0 {
			continue
		}
		removed := map[string]any{}
		for _, k := range keys {
			removed[k] = nil
		}
		metadata[field] = removed
	}
	return json.Marshal(map[string]any{"metadata": metadata})
}

// flotillaKeys lists the label and annotation keys of Flotilla's (workv1alpha1.KeyPrefix) that obj carries.
func flotillaKeys(obj *unstructured.Unstructured) (labels, annotations []string) {
	for k := range obj.GetLabels() {
		if strings.HasPrefix(k, workv1alpha1.KeyPrefix) {
			labels = append(labels, k)
		}
	}
	for k := range obj.GetAnnotations() {
		if strings.HasPrefix(k, workv1alpha1.KeyPrefix) {
			annotations = append(annotations, k)
		}
	}
	return labels, annotations
}

// Releaser removes the execution finalizer from deleted Works whose Cluster is gone from the hub: the last
// step of a cluster's deregistration (registration.Deregistration), which deletes the cluster's namespace
// and then lets the Cluster go. Their member objects stay (a cluster leaving the hub keeps its workloads
// unless unjoin --delete-resources had them deleted first), and no agent or push credential is left to
// remove the finalizer, which would otherwise hold the Work, and the cluster's namespace, in Terminating for
// good, say after a Cluster was deleted with kubectl while its agent was stopped. Nothing reaches the member
// then, so those objects keep Flotilla's marks (a re-join of the cluster to this hub takes them over again).
type Releaser struct {
	Client client.Client
	// Clusters reads Clusters from the API server. The cache answers first: a Cluster it holds exists, and
	// the Work is its executor's to finalize. Only a Cluster the cache does not hold is read from the API
	// server, since one not seen yet is not gone.
	Clusters client.Reader
}

// SetupRelease registers the Releaser with the hub's manager. A deleted Work is looked at when it changes,
// and again when its Cluster goes: a Work deleted before that (its objects deleted by an unjoin
// --delete-resources, or its agent stopped) changes no more.
func SetupRelease(mgr ctrl.Manager) error {
	r := &Releaser{Client: mgr.GetClient(), Clusters: mgr.GetAPIReader()}
	deleted := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetDeletionTimestamp() != nil })
	worksOfCluster := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, cluster client.Object) []reconcile.Request {
		works := &workv1alpha1.WorkList{}
		if err := r.Client.List(ctx, works, client.InNamespace(clusterv1alpha1.ClusterNamespace(cluster.GetName()))); err != nil {
			log.FromContext(ctx).Error(err, "listing the Works of a removed cluster", "cluster", cluster.GetName())
			return nil
		}
		var requests []reconcile.Request
		for i := range works.Items {
			if works.Items[i].DeletionTimestamp != nil {
				requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&works.Items[i])})
			}
		}
		return requests
	})
	onlyDeletes := predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return false },
		UpdateFunc: func(event.UpdateEvent) bool { return false },
	}
	return ctrl.NewControllerManagedBy(mgr).Named("work-release").For(&workv1alpha1.Work{}, builder.WithPredicates(deleted)).
		Watches(&clusterv1alpha1.Cluster{}, worksOfCluster, builder.WithPredicates(onlyDeletes)).Complete(r)
}

// Reconcile releases one deleted Work of a cluster that is gone.
func (r *Releaser) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	w := &workv1alpha1.Work{}
	if err := r.Client.Get(ctx, req.NamespacedName, w); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	name, ok := clusterv1alpha1.ClusterOfNamespace(w.Namespace)
	if !ok || w.DeletionTimestamp == nil || !controllerutil.ContainsFinalizer(w, workv1alpha1.FinalizerExecution) {
		return ctrl.Result{}, nil
	}
	err := r.Client.Get(ctx, client.ObjectKey{Name: name}, &clusterv1alpha1.Cluster{})
	if apierrors.IsNotFound(err) {
		err = r.Clusters.Get(ctx, client.ObjectKey{Name: name}, &clusterv1alpha1.Cluster{})
	}
	if !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err // the cluster's executor finalizes it
	}
	patch := client.MergeFromWithOptions(w.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(w, workv1alpha1.FinalizerExecution)
	return ctrl.Result{}, client.IgnoreNotFound(r.Client.Patch(ctx, w, patch))
}
