// Package rollout decides how a change of a template reaches its clusters when its policy asks for a
// progressive rollout, and keeps the template's history as ControllerRevisions.
//
// A revision is what a change rolls out: the template's content (everything but its identity and status)
// and the override policies that select it. Its hash names it; a ControllerRevision per hash, next to the
// template, keeps it with an increasing number, so `flotilla rollout history` lists them and `undo` puts one
// back. Plan (plan.go) is pure: from the clusters' states and the strategy it decides which clusters run
// the target revision now; the binding render controller renders, writes and records what it decides.
package rollout

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/override"
)

// Revision is one revision's content, as a ControllerRevision keeps it.
type Revision struct {
	// Template is the template without its identity (uid, resourceVersion, generation, times, owners) and
	// status; labels and annotations are kept.
	Template map[string]any `json:"template"`
	// Generation is the template's generation when the revision was recorded.
	Generation int64 `json:"generation,omitempty"`
	// Overrides are the override policies that selected the template, in the order they apply.
	Overrides []Override `json:"overrides,omitempty"`
}

// Override is one override policy of a revision.
type Override struct {
	Namespace string                       `json:"namespace,omitempty"`
	Name      string                       `json:"name"`
	Spec      *policyv1alpha1.OverrideSpec `json:"spec"`
}

// Snapshot returns the revision of a template under the given override policies, and its hash.
func Snapshot(template *unstructured.Unstructured, policies []override.Policy) (Revision, string, error) {
	content := template.DeepCopy().Object
	delete(content, "status")
	meta, _ := content["metadata"].(map[string]any)
	kept := map[string]any{}
	for _, f := range []string{"name", "namespace", "labels", "annotations"} {
		if v, ok := meta[f]; ok {
			kept[f] = v
		}
	}
	content["metadata"] = kept
	// What the hub itself writes on a template is not the user's change: the detector's claim labels, and the
	// annotations Render drops too. A map left empty goes, as the API server drops it: a template with no
	// labels is the same revision as one with only claim labels.
	for field, keys := range notContent {
		for _, k := range keys {
			unstructured.RemoveNestedField(content, "metadata", field, k)
		}
		if m, _ := kept[field].(map[string]any); m != nil && len(m) == 0 {
			delete(kept, field)
		}
	}
	rev := Revision{Template: content, Generation: template.GetGeneration()}
	for _, p := range policies {
		if p.Selects(template) {
			rev.Overrides = append(rev.Overrides, Override{Namespace: p.Namespace, Name: p.Name, Spec: p.Spec})
		}
	}
	// The hash is of the content only: the same template and overrides are the same revision whatever
	// generation they came back at (an undo).
	raw, err := json.Marshal(Revision{Template: rev.Template, Overrides: rev.Overrides})
	if err != nil {
		return Revision{}, "", err
	}
	sum := sha256.Sum256(raw)
	return rev, hex.EncodeToString(sum[:])[:10], nil
}

// Policies returns the revision's override policies.
func (r *Revision) Policies() []override.Policy {
	out := make([]override.Policy, len(r.Overrides))
	for i, o := range r.Overrides {
		out[i] = override.Policy{Namespace: o.Namespace, Name: o.Name, Spec: o.Spec}
	}
	return out
}

// notContent are the labels and annotations of a template that are not part of its revisions: the
// detector's claim labels, and the annotations Render drops.
var notContent = map[string][]string{
	"labels": {policyv1alpha1.LabelPropagationPolicyNamespace, policyv1alpha1.LabelPropagationPolicyName,
		policyv1alpha1.LabelClusterPropagationPolicy},
	"annotations": {"kubectl.kubernetes.io/last-applied-configuration", "deployment.kubernetes.io/revision"},
}

// Apply returns live with the revision's content: its identity (uid, resourceVersion, owners) and the labels
// and annotations no revision holds (the detector's claim) stay, the rest is the revision's, and its
// generation the revision's (so a cluster running an older revision never reports the template's current
// generation as observed).
func (r *Revision) Apply(live *unstructured.Unstructured) *unstructured.Unstructured {
	out := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(r.Template)}
	meta := live.DeepCopy()
	labels, annotations := out.GetLabels(), out.GetAnnotations()
	for _, k := range notContent["labels"] {
		if v, ok := live.GetLabels()[k]; ok {
			labels = withKey(labels, k, v)
		}
	}
	for _, k := range notContent["annotations"] {
		if v, ok := live.GetAnnotations()[k]; ok {
			annotations = withKey(annotations, k, v)
		}
	}
	meta.SetLabels(labels)
	meta.SetAnnotations(annotations)
	meta.SetGeneration(r.Generation)
	out.Object["metadata"] = meta.Object["metadata"]
	return out
}

func withKey(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[k] = v
	return m
}

// Namespace is where a template's ControllerRevisions live: the template's namespace, or the hub's system
// namespace for a cluster-scoped template.
func Namespace(template workv1alpha1.ObjectReference) string {
	if template.Namespace == "" {
		return clusterv1alpha1.SystemNamespace
	}
	return template.Namespace
}

// Name is the name of the ControllerRevision of a binding's revision.
func Name(binding, hash string) string {
	return binding + "-" + hash
}

// List returns a binding's ControllerRevisions, oldest revision first.
func List(ctx context.Context, c client.Reader, template workv1alpha1.ObjectReference, binding string) ([]appsv1.ControllerRevision, error) {
	list := &appsv1.ControllerRevisionList{}
	if err := c.List(ctx, list, client.InNamespace(Namespace(template)), client.MatchingLabels{workv1alpha1.LabelRevisionOf: binding}); err != nil {
		return nil, err
	}
	slices.SortFunc(list.Items, func(a, b appsv1.ControllerRevision) int { return cmp.Compare(a.Revision, b.Revision) })
	return list.Items, nil
}

// Decode reads a ControllerRevision's content.
func Decode(cr *appsv1.ControllerRevision) (*Revision, error) {
	rev := &Revision{}
	if err := json.Unmarshal(cr.Data.Raw, rev); err != nil {
		return nil, fmt.Errorf("ControllerRevision %s/%s: %w", cr.Namespace, cr.Name, err)
	}
	return rev, nil
}

// Find returns the ControllerRevision of a hash among revisions, or nil.
func Find(revisions []appsv1.ControllerRevision, hash string) *appsv1.ControllerRevision {
	for i := range revisions {
		if revisions[i].Labels[LabelHash] == hash {
			return &revisions[i]
		}
	}
	return nil
}

// LabelHash on a ControllerRevision is its revision's hash.
const LabelHash = "work.flotilla.io/revision-hash"

// Record makes the ControllerRevision of a revision the newest of the binding's: created with the next
// number, or (a revision that comes back, as after an undo) renumbered to it. It keeps at most limit
// revisions, never dropping the ones named in keep. It returns the revision's number. The revisions are
// read from c's cache, and from reader when the cache has not seen one just created.
func Record(ctx context.Context, c client.Client, reader client.Reader, template *unstructured.Unstructured, ref workv1alpha1.ObjectReference, binding string,
	rev Revision, hash string, limit int, keep ...string) (int64, error) {
	revisions, err := List(ctx, c, ref, binding)
	if err != nil {
		return 0, err
	}
	n, err := record(ctx, c, revisions, template, ref, binding, rev, hash, limit, keep)
	if !apierrors.IsAlreadyExists(err) {
		return n, err
	}
	if revisions, err = List(ctx, reader, ref, binding); err != nil {
		return 0, err
	}
	return record(ctx, c, revisions, template, ref, binding, rev, hash, limit, keep)
}

func record(ctx context.Context, c client.Client, revisions []appsv1.ControllerRevision, template *unstructured.Unstructured,
	ref workv1alpha1.ObjectReference, binding string, rev Revision, hash string, limit int, keep []string) (int64, error) {
	next := int64(1)
	if n := len(revisions); n > 0 {
		next = revisions[n-1].Revision + 1
	}
	switch existing := Find(revisions, hash); {
	case existing != nil && existing.Revision == next-1:
		return existing.Revision, nil
	case existing != nil:
		patch := client.MergeFrom(existing.DeepCopy())
		existing.Revision = next
		if err := c.Patch(ctx, existing, patch); err != nil {
			return 0, err
		}
		slices.SortFunc(revisions, func(a, b appsv1.ControllerRevision) int { return cmp.Compare(a.Revision, b.Revision) })
	default:
		raw, err := json.Marshal(rev)
		if err != nil {
			return 0, err
		}
		cr := appsv1.ControllerRevision{
			ObjectMeta: metav1.ObjectMeta{Namespace: Namespace(ref), Name: Name(binding, hash),
				Labels: map[string]string{workv1alpha1.LabelRevisionOf: binding, LabelHash: hash},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: template.GetAPIVersion(), Kind: template.GetKind(),
					Name: template.GetName(), UID: template.GetUID()}}},
			Data: runtime.RawExtension{Raw: raw}, Revision: next,
		}
		if err := c.Create(ctx, &cr); err != nil {
			return 0, err
		}
		revisions = append(revisions, cr)
	}
	for i := 0; len(revisions)-i > limit; i++ {
		if old := &revisions[i]; !slices.Contains(keep, old.Labels[LabelHash]) {
			if err := client.IgnoreNotFound(c.Delete(ctx, old)); err != nil {
				return 0, err
			}
		}
	}
	return next, nil
}
