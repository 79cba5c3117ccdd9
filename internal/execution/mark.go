package execution

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// The executor's mark on a member object says which hub, for which Work, applied it. The executor goes by it
// to treat an object as its Work's own: to apply over it without conflictResolution: Overwrite, and to
// delete it when the Work lets go of it. So the mark names the hub as well as the Work, and fits only the
// object it was made for:
//
//   - the label work.flotilla.io/managed-by and the annotation work.flotilla.io/work (the Work's
//     namespace/name) are for people, tools and the watch on applied objects (watch.go); they prove nothing;
//   - the annotation work.flotilla.io/owner, "HUB/DIGEST", is what the executor checks: HUB is the hub's ID,
//     DIGEST a SHA-256 over the hub ID, the Work and the object's group, kind, namespace and name. Two hubs
//     sharing a member have different IDs (often the same Work names too: the Work of a binding is named
//     after it), so neither takes the other's objects for its own; a mark copied onto another object
//     (`kubectl get -o yaml`, a new name, apply) does not fit that object.
//
// The hub's ID is the UID of its kube-system namespace (registration.HubID): one for all replicas of a hub,
// as they share its etcd, kept across restarts, and new for another hub. Agents learn it from the hub's
// cluster-info.
//
// The digest has no key: anyone can compute the mark of any object. A key would stop only someone who places
// a mark on an object on purpose, and that needs write access to that very object in the member (the mark is
// only ever checked on the object a Work names), which already lets them change or replace it; at most, a
// right to update becomes a deletion once the hub's Work lets go of the object. A key would have to be shared
// by the hub and every executor of each member, and outlive every object marked with it (were it lost, every
// object would turn into a conflict).
//
// Objects marked by earlier versions carry the label and the work annotation but no owner annotation. Such a
// legacy mark counts only on an object the Work's status records as applied (so one copied onto another
// object does not), and the next apply writes the full mark over it. An executor that knows no hub ID (an
// agent whose hub is older and publishes none) marks and recognises objects as earlier versions did.

// objectID is a member object's identity as the mark covers it: the version is left out, as an object is
// the same whichever version reads it.
type objectID struct{ group, kind, namespace, name string }

func idOf(obj *unstructured.Unstructured) objectID {
	gvk := obj.GroupVersionKind()
	return objectID{group: gvk.Group, kind: gvk.Kind, namespace: obj.GetNamespace(), name: obj.GetName()}
}

// ownerMark is the work.flotilla.io/owner value the executor of hub hubID writes on object id for Work work
// (namespace/name).
func ownerMark(hubID, work string, id objectID) string {
	h := sha256.New()
	for _, part := range []string{hubID, work, id.group, id.kind, id.namespace, id.name} {
		_ = binary.Write(h, binary.BigEndian, uint64(len(part)))
		h.Write([]byte(part))
	}
	// 64 bits keep two marks from ever meeting by chance; the digest is no secret to guess (see above).
	return hubID + "/" + hex.EncodeToString(h.Sum(nil)[:8])
}

// markedBy returns the Work whose mark of this hub obj carries, and whether that mark is a legacy one (from
// before the owner annotation). It returns "" when obj carries no mark of this hub for itself: none, another
// hub's, or one made for another object.
func markedBy(hubID string, obj *unstructured.Unstructured) (work string, legacy bool) {
	annotations := obj.GetAnnotations()
	work = annotations[workv1alpha1.AnnotationWork]
	owner, hasOwner := annotations[workv1alpha1.AnnotationOwner]
	switch {
	case work == "":
		return "", false
	case hubID == "":
		return work, false // as earlier versions
	case !hasOwner:
		return work, true
	case owner == ownerMark(hubID, work, idOf(obj)):
		return work, false
	}
	return "", false
}

// owns says whether obj is w's own: it carries w's mark of this hub, or a legacy mark of w and w's status
// records obj as applied.
func owns(hubID string, w *workv1alpha1.Work, obj *unstructured.Unstructured) bool {
	work, legacy := markedBy(hubID, obj)
	return work == workRef(w) && (!legacy || recordedApplied(w, idOf(obj)))
}

// recordedApplied says whether w's status records the object id as applied by w.
func recordedApplied(w *workv1alpha1.Work, id objectID) bool {
	for _, s := range w.Status.ManifestStatuses {
		i := s.Identifier
		if s.Applied && i.Group == id.group && i.Kind == id.kind && i.Namespace == id.namespace && i.Name == id.name {
			return true
		}
	}
	return false
}

// mark labels obj, about to be applied as the object id, as Flotilla's, names its Work and writes this hub's
// owner annotation (none without a hub ID), records an adoption, and drops the hub's list of retained
// fields. Whatever of these the manifest carried itself is replaced.
func mark(obj *unstructured.Unstructured, hubID string, w *workv1alpha1.Work, id objectID, adopt bool) {
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[workv1alpha1.LabelManagedBy] = workv1alpha1.ManagedByValue
	obj.SetLabels(labels)
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[workv1alpha1.AnnotationWork] = workRef(w)
	delete(annotations, workv1alpha1.AnnotationOwner)
	if hubID != "" {
		annotations[workv1alpha1.AnnotationOwner] = ownerMark(hubID, workRef(w), id)
	}
	delete(annotations, workv1alpha1.AnnotationRetainedFields) // for the executor (retain.go), not the member
	if adopt {
		annotations[workv1alpha1.AnnotationAdopted] = "true"
	}
	obj.SetAnnotations(annotations)
}
