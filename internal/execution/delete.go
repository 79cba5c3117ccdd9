package execution

import (
	"context"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// prune lets go of the objects the Work may have applied before (its status lists them, or noteApplying
// remembers them) but no longer holds.
func (e *Executor) prune(ctx context.Context, m *Member, w *workv1alpha1.Work, current []workv1alpha1.ManifestStatus) error {
	for _, old := range e.owned(w) {
		if slices.ContainsFunc(current, func(s workv1alpha1.ManifestStatus) bool { return sameObject(s.Identifier, old) }) {
			continue
		}
		if err := e.letGo(ctx, m, w, old); err != nil {
			return err
		}
		e.recorded(w, func(id workv1alpha1.ResourceIdentifier) bool { return sameObject(id, old) })
	}
	return nil
}

// letGo lets go of a member object of the Work as its manifest config and deleteOption say: an object of a
// ReadOnly manifest is left as it is; one the deleteOption orphans is released (releaseObject); any other
// goes to deleteObject. A Work with neither (every Work the hub renders) goes straight to deleteObject.
func (e *Executor) letGo(ctx context.Context, m *Member, w *workv1alpha1.Work, id workv1alpha1.ResourceIdentifier) error {
	if len(w.Spec.ManifestConfigs) == 0 && w.Spec.DeleteOption == nil {
		return e.deleteObject(ctx, m, w, id)
	}
	resource := id.Resource
	if resource == "" { // not applied yet when it was listed (noteApplying; earlier versions' status)
		_, mapping, err := m.resource(schema.GroupVersionKind{Group: id.Group, Version: id.Version, Kind: id.Kind}, id.Namespace)
		if meta.IsNoMatchError(err) {
			return nil // the kind is gone from the member, and its objects with it
		}
		if err != nil {
			return err
		}
		resource = mapping.Resource.Resource
	}
	if c := w.Spec.ManifestConfig(id.Group, resource, id.Namespace, id.Name); c != nil && c.UpdateStrategy != nil &&
		c.UpdateStrategy.Type == workv1alpha1.UpdateReadOnly {
		return nil
	}
	if w.Spec.Orphans(id.Group, resource, id.Namespace, id.Name) {
		return e.releaseObject(ctx, m, w, id)
	}
	return e.deleteObject(ctx, m, w, id)
}

// deleteObject lets go of a member object of the Work: it is deleted when deletable says so, and left in
// place otherwise.
func (e *Executor) deleteObject(ctx context.Context, m *Member, w *workv1alpha1.Work, id workv1alpha1.ResourceIdentifier) error {
	ri, existing, err := m.current(ctx, id)
	if err != nil || existing == nil {
		return err
	}
	if !deletable(e.HubID, w, existing) {
		return nil
	}
	err = ri.Delete(ctx, id.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground),
		Preconditions: &metav1.Preconditions{UID: ptr.To(existing.GetUID())}})
	return client.IgnoreNotFound(err)
}

// deletable says whether letting go of obj means deleting it for Work w. Only an object that carries w's
// mark of this hub, made for that object (mark.go), may go, and of those, objects Flotilla adopted and
// Namespaces, CRDs and PVCs (deleting them takes everything in them, custom resources or data) only when the
// template opted in with work.flotilla.io/deletion-policy: Delete. A Namespace or CRD Flotilla did not create
// is never deleted.
func deletable(hubID string, w *workv1alpha1.Work, obj *unstructured.Unstructured) bool {
	if !owns(hubID, w, obj) {
		return false // someone else's (another hub's, a copied mark), or taken over by another Work
	}
	annotations := obj.GetAnnotations()
	kind := obj.GroupVersionKind().GroupKind()
	optedIn := annotations[workv1alpha1.AnnotationDeletionPolicy] == workv1alpha1.DeletionPolicyDelete
	wasAdopted := annotations[workv1alpha1.AnnotationAdopted] == "true"
	switch {
	case wasAdopted && (kind == namespaceKind || kind == crdKind):
		return false
	case wasAdopted, kind == namespaceKind, kind == crdKind, kind == pvcKind:
		return optedIn
	}
	return true
}

// finalize lets go of a deleted Work's objects in the member and then of the Work: it deletes those
// deletable says may go and the Work's deleteOption does not orphan (letGo), or, when the Work preserves them
// or its cluster leaves the hub keeping them, releases them all (release.go).
func (e *Executor) finalize(ctx context.Context, m *Member, w *workv1alpha1.Work) error {
	if !controllerutil.ContainsFinalizer(w, workv1alpha1.FinalizerExecution) {
		return nil
	}
	unjoin, err := e.unjoining(ctx, w)
	if err != nil {
		return err
	}
	letGo := e.letGo
	if unjoin == clusterv1alpha1.UnjoinKeepResources || ptr.Deref(w.Spec.PreserveResourcesOnDeletion, false) {
		letGo = e.releaseObject
	}
	// The manifests as well as the reported statuses: a Work deleted before its status was written still
	// owns what it applied.
	ids := e.owned(w)
	if manifests, err := decode(w); err == nil {
		for i, obj := range manifests {
			ids = append(ids, identifier(obj, i))
		}
	}
	for _, id := range ids {
		if err := letGo(ctx, m, w, id); err != nil {
			return err
		}
	}
	if unjoin == clusterv1alpha1.UnjoinDeleteResources {
		// The finalizer stays until the Cluster is gone (the hub's deregistration lets it go once every
		// Work of the cluster reports this) and the hub releases the Work: a Work gone now would be written
		// again by its binding, and applied again.
		message := "the member objects were deleted: the cluster is being unjoined"
		if ptr.Deref(w.Spec.PreserveResourcesOnDeletion, false) {
			message = "the member objects were kept, as the Work preserves them: the cluster is being unjoined"
		}
		return e.setStatus(ctx, w, w.Status.ManifestStatuses, metav1.ConditionFalse, workv1alpha1.WorkReasonDeleted, message)
	}
	// Only the finalizer changes: a patch of that list, made against the Work as read.
	patch := client.MergeFromWithOptions(w.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(w, workv1alpha1.FinalizerExecution)
	e.forget(w)
	if err := e.Hub.Patch(ctx, w, patch); client.IgnoreNotFound(err) != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.finalized == nil {
		e.finalized = map[types.NamespacedName]types.UID{}
	}
	e.finalized[client.ObjectKeyFromObject(w)] = w.UID
	return nil
}

// unjoining returns how the Work's cluster leaves the hub: the AnnotationUnjoin of its Cluster, and
// KeepResources once the Cluster is gone or is being deleted without it (kubectl delete), since a cluster
// leaving the hub never takes its workloads with it unless asked.
// An error reading the Cluster is returned, never taken for its absence.
func (e *Executor) unjoining(ctx context.Context, w *workv1alpha1.Work) (string, error) {
	name, ok := clusterv1alpha1.ClusterOfNamespace(w.Namespace)
	if !ok {
		return "", nil
	}
	cluster := &clusterv1alpha1.Cluster{}
	var err error
	if e.Clusters == nil {
		err = e.Hub.Get(ctx, client.ObjectKey{Name: name}, cluster)
	} else {
		cluster, err = e.clusterReads.get(ctx, e.Clusters, name) // live, shared by the Works finalized now
	}
	if apierrors.IsNotFound(err) {
		return clusterv1alpha1.UnjoinKeepResources, nil
	}
	if err != nil {
		return "", err
	}
	unjoin := cluster.Annotations[clusterv1alpha1.AnnotationUnjoin]
	if unjoin == "" && cluster.DeletionTimestamp != nil {
		return clusterv1alpha1.UnjoinKeepResources, nil // deleted without `flotilla unjoin`
	}
	return unjoin, nil
}
