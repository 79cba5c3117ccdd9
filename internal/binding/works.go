package binding

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/metrics"
)

func workLabels(b client.Object) map[string]string {
	return map[string]string{workv1alpha1.LabelBindingNamespace: b.GetNamespace(), workv1alpha1.LabelBindingName: b.GetName()}
}

// claims says whether the Work, which carries b's labels, is b's: b wrote it (or it was written before Works
// recorded their binding's UID), or an earlier binding of the same name did, on a cluster b places its
// template on or is leaving, and b takes it over (the template is the same; its objects go on being
// managed). An earlier binding's Work on any other cluster is not b's to change or delete: the work sweeper
// releases it, and its objects stay. (Deleting it as not needed would delete objects that nobody asked to
// delete, all of them when b is not scheduled yet.)
func claims(b client.Object, w *workv1alpha1.Work) bool {
	uid := w.Annotations[workv1alpha1.AnnotationBindingUID]
	if uid == "" || uid == string(b.GetUID()) {
		return true
	}
	o, ok := b.(workv1alpha1.Binding)
	return ok && wants(o.BindingSpec(), w.Namespace)
}

// claimed keeps the Works b claims among those that carry its labels.
func claimed(b client.Object, works []workv1alpha1.Work) []workv1alpha1.Work {
	return slices.DeleteFunc(works, func(w workv1alpha1.Work) bool { return !claims(b, &w) })
}

// readTemplate reads the template a binding refers to.
func readTemplate(ctx context.Context, c client.Reader, ref workv1alpha1.ObjectReference) (*unstructured.Unstructured, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, err
	}
	t := &unstructured.Unstructured{}
	t.SetGroupVersionKind(gv.WithKind(ref.Kind))
	return t, c.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, t)
}

// dependencies returns the objects on the hub that the template's pods refer to, marked as dependencies,
// when the policy asks for them (propagateDeps). Missing ones are skipped until they appear.
func (r *Controller[T]) dependencies(ctx context.Context, template *unstructured.Unstructured, propagate bool) ([]*unstructured.Unstructured, error) {
	if !propagate {
		return nil, nil
	}
	deps, err := r.Interpreter.Dependencies(ctx, template)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, d := range deps {
		obj := &unstructured.Unstructured{}
		obj.SetAPIVersion(d.APIVersion)
		if d.APIVersion == "" {
			obj.SetAPIVersion("v1")
		}
		obj.SetKind(d.Kind)
		err := r.Templates.Get(ctx, client.ObjectKey{Namespace: template.GetNamespace(), Name: d.Name}, obj)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		annotations := obj.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[workv1alpha1.AnnotationDependency] = "true"
		obj.SetAnnotations(annotations)
		out = append(out, obj)
	}
	return out, nil
}

// ensureWork creates or changes the Work of one cluster; nothing is written when nothing changed. A change is
// a merge patch of the spec and the overrides annotation, without a resourceVersion precondition: the Work's
// spec is this controller's alone (its status is the agent's, and never copied here).
func (r *Controller[T]) ensureWork(ctx context.Context, b T, rendered []*unstructured.Unstructured, overrides []string, cluster, revision string) error {
	spec := b.BindingSpec()
	manifests, err := encodeManifests(rendered)
	if err != nil {
		return err
	}
	suspend := spec.Suspension != nil && (ptr.Deref(spec.Suspension.Dispatching, false) ||
		(spec.Suspension.DispatchingOnClusters != nil && slices.Contains(spec.Suspension.DispatchingOnClusters.ClusterNames, cluster)))
	want := workv1alpha1.WorkSpec{
		Workload:                    workv1alpha1.WorkloadTemplate{Manifests: manifests},
		PreserveResourcesOnDeletion: spec.PreserveResourcesOnDeletion,
		ConflictResolution:          spec.ConflictResolution,
	}
	if suspend {
		want.SuspendDispatching = ptr.To(true)
	}
	if want.ConflictResolution == "" {
		want.ConflictResolution = policyv1alpha1.ConflictAbort
	}
	annotation := strings.Join(overrides, ",")
	uid := string(b.GetUID())
	written, err := digestOf(want, annotation, uid, revision)
	if err != nil {
		return err
	}
	key := client.ObjectKey{Namespace: clusterv1alpha1.ClusterNamespace(cluster), Name: workv1alpha1.WorkName(b.GetNamespace(), b.GetName())}
	work := &workv1alpha1.Work{}
	err = r.Client.Get(ctx, key, work)
	switch {
	case err == nil && r.written.pending(key, work.ResourceVersion, written):
		// The cache still shows the version an earlier render patched, and that patch said what this one would.
		return nil
	case apierrors.IsNotFound(err) && r.written.created(key):
		// Created by an earlier render the cache has not caught up with: read it from the API server rather
		// than be refused a second create.
		err = r.Reader.Get(ctx, key, work)
	}
	if apierrors.IsNotFound(err) {
		work = &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace, Labels: workLabels(b),
			Annotations: map[string]string{workv1alpha1.AnnotationBindingUID: uid},
			Finalizers:  []string{workv1alpha1.FinalizerExecution}}, Spec: want}
		if annotation != "" {
			work.Annotations[workv1alpha1.AnnotationOverrides] = annotation
		}
		if revision != "" {
			work.Annotations[workv1alpha1.AnnotationRevision] = revision
		}
		if err = r.Client.Create(ctx, work, client.FieldOwner(renderManager)); !apierrors.IsAlreadyExists(err) {
			if err == nil {
				r.written.wrote(key, "", written)
				metrics.WorksWritten.WithLabelValues("create").Inc()
				metrics.Propagation.Written(spec.Resource.UID, work.TemplateGeneration(), cluster)
			}
			return err
		}
		// Created before this controller started (by an earlier hub process) and not cached yet: read it from
		// the API server and bring it up to date like any other.
		work = &workv1alpha1.Work{}
		err = r.Reader.Get(ctx, key, work)
	}
	if err != nil {
		return err
	}
	// A Work of an earlier binding of this name is taken over (claims): it records this binding's UID from now.
	if equality.Semantic.DeepEqual(work.Spec, want) && work.Annotations[workv1alpha1.AnnotationOverrides] == annotation &&
		work.Annotations[workv1alpha1.AnnotationBindingUID] == uid && work.Annotations[workv1alpha1.AnnotationRevision] == revision {
		return nil
	}
	patch := client.MergeFrom(work.DeepCopy())
	work.Spec = want
	metav1.SetMetaDataAnnotation(&work.ObjectMeta, workv1alpha1.AnnotationBindingUID, uid)
	for key, value := range map[string]string{workv1alpha1.AnnotationOverrides: annotation, workv1alpha1.AnnotationRevision: revision} {
		if value == "" {
			delete(work.Annotations, key)
		} else {
			metav1.SetMetaDataAnnotation(&work.ObjectMeta, key, value)
		}
	}
	before := work.ResourceVersion
	if err := r.Client.Patch(ctx, work, patch, client.FieldOwner(renderManager)); err != nil {
		return err
	}
	if work.ResourceVersion == before {
		return nil // nothing to change: the cache had not caught up with this controller's previous write
	}
	r.written.wrote(key, before, written)
	metrics.WorksWritten.WithLabelValues("update").Inc()
	metrics.Propagation.Written(spec.Resource.UID, work.TemplateGeneration(), cluster)
	return nil
}

// ownWrites are the Works the render controller wrote that its cache has not shown since, each with the
// version written over ("" for a create) and a digest of what was written. A render that comes before the
// cache catches up (woken by the template's status, or another Work of the binding) reads a Work it created
// from the API server rather than be refused a second create, and does not patch a Work again with what it
// already wrote over the version the cache still shows. A write is forgotten once the cache shows another
// version of its Work.
type ownWrites struct {
	mu     sync.Mutex
	writes map[client.ObjectKey]ownWrite
}

type ownWrite struct {
	over   string
	digest [sha256.Size]byte
}

// wrote records a write of key over version over ("" for a create) of what digest sums.
func (o *ownWrites) wrote(key client.ObjectKey, over string, digest [sha256.Size]byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.writes == nil {
		o.writes = map[client.ObjectKey]ownWrite{}
	}
	o.writes[key] = ownWrite{over: over, digest: digest}
}

// pending says whether the cache, showing version cached of key, is behind a patch of this controller that
// wrote what digest sums. A cache that shows another version forgets the write.
func (o *ownWrites) pending(key client.ObjectKey, cached string, digest [sha256.Size]byte) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	w, ok := o.writes[key]
	if !ok {
		return false
	}
	if w.over != cached {
		delete(o.writes, key)
		return false
	}
	return w.digest == digest
}

// created says whether this controller created key and its cache has not shown it since.
func (o *ownWrites) created(key client.ObjectKey) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	w, ok := o.writes[key]
	return ok && w.over == ""
}

// digestOf sums what ensureWork writes to a Work: its spec and the annotations it keeps.
func digestOf(spec workv1alpha1.WorkSpec, overrides, bindingUID, revision string) ([sha256.Size]byte, error) {
	raw, err := json.Marshal(struct {
		Spec                            workv1alpha1.WorkSpec
		Overrides, BindingUID, Revision string
	}{spec, overrides, bindingUID, revision})
	return sha256.Sum256(raw), err
}

// encodeManifests encodes rendered manifests as the API server stores them, so that an unchanged Work
// compares equal byte for byte. (json.Marshal rather than MarshalJSON, whose trailing newline the API server
// does not keep: the stored Work would never equal the rendered one and be written again on every reconcile.)
func encodeManifests(rendered []*unstructured.Unstructured) ([]workv1alpha1.Manifest, error) {
	manifests := make([]workv1alpha1.Manifest, len(rendered))
	for i, m := range rendered {
		raw, err := json.Marshal(m.Object)
		if err != nil {
			return nil, err
		}
		manifests[i] = workv1alpha1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}}
	}
	return manifests, nil
}

// finalize deletes the binding's Works on the clusters mine says are this replica's, letting go of their
// member objects first when the template was released rather than deleted, and drops the binding's finalizer
// once every Work is gone (whichever replica sees that first: the last Work's deletion brings the binding
// back to its owner). Both are patches: the binding's other fields and the Works' status are other
// controllers'.
func (r *Controller[T]) finalize(ctx context.Context, b T, works []workv1alpha1.Work, mine func(cluster string) bool) error {
	release := b.GetAnnotations()[workv1alpha1.AnnotationRelease] == "true"
	for i := range works {
		w := &works[i]
		if cluster, ok := clusterv1alpha1.ClusterOfNamespace(w.Namespace); ok && !mine(cluster) {
			continue
		}
		if release && !ptr.Deref(w.Spec.PreserveResourcesOnDeletion, false) {
			preserve := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"preserveResourcesOnDeletion":true}}`))
			if err := r.Client.Patch(ctx, w, preserve, client.FieldOwner(renderManager)); apierrors.IsNotFound(err) {
				continue
			} else if err != nil {
				return err // never deleted before it lets go of its objects
			}
		}
		if w.DeletionTimestamp == nil {
			if err := client.IgnoreNotFound(r.Client.Delete(ctx, w)); err != nil {
				return err
			}
		}
	}
	if len(works) > 0 {
		return nil // the Works' deletion brings the binding back
	}
	return client.IgnoreNotFound(removeFinalizer(ctx, r.Client, b, workv1alpha1.FinalizerBinding))
}

// removeFinalizer removes one finalizer by a JSON patch that tests it is still where it was read: no
// resourceVersion precondition, and no other finalizer (the garbage collector's, say) is ever dropped with it.
func removeFinalizer(ctx context.Context, c client.Client, obj client.Object, finalizer string) error {
	i := slices.Index(obj.GetFinalizers(), finalizer)
	if i < 0 {
		return nil
	}
	path := "/metadata/finalizers/" + strconv.Itoa(i)
	patch, err := json.Marshal([]map[string]any{{"op": "test", "path": path, "value": finalizer}, {"op": "remove", "path": path}})
	if err != nil {
		return err
	}
	return c.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, patch), client.FieldOwner(renderManager))
}
