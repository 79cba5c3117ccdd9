package execution

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// A fieldPath names one field of a manifest by its keys from the object's root, e.g. spec.replicas.
type fieldPath []string

func (p fieldPath) String() string {
	return strings.Join(p, ".")
}

var replicasPath = fieldPath{"spec", "replicas"}

// RetainedFieldManager holds, in a member object, the fields Flotilla stopped applying while nobody else
// owned them (handOver). It is an apply manager: the first update of such a field by anyone else (the
// HorizontalPodAutoscaler's scale, `kubectl scale`) takes the field from it.
const RetainedFieldManager = workv1alpha1.FieldManager + "-retained"

// retainRules list the fields of a manifest the member keeps. Each rule reads only the manifest; the one
// that needs the member (an autoscaler targets the object) is Member.autoscaled.
var retainRules = []func(obj *unstructured.Unstructured) []fieldPath{retainLabelled, retainAnnotated}

// retainAnnotated keeps the fields the kind's InterpreterCustomization retains, which the hub listed in the
// manifest's annotation (binding render).
func retainAnnotated(obj *unstructured.Unstructured) []fieldPath {
	list := obj.GetAnnotations()[workv1alpha1.AnnotationRetainedFields]
	if list == "" {
		return nil
	}
	var out []fieldPath
	for _, p := range strings.Split(list, ",") {
		path := fieldPath(strings.Split(strings.TrimPrefix(strings.TrimSpace(p), "."), "."))
		if !slices.Contains(path, "") {
			out = append(out, path)
		}
	}
	return out
}

// retainLabelled keeps spec.replicas in the member for a template labelled to retain it, with Flotilla's
// label or Karmada's.
func retainLabelled(obj *unstructured.Unstructured) []fieldPath {
	labels := obj.GetLabels()
	if labels[workv1alpha1.LabelRetainReplicas] == "true" || labels[workv1alpha1.LabelKarmadaRetainReplicas] == "true" {
		return []fieldPath{replicasPath}
	}
	return nil
}

// retained returns the fields of obj that the member keeps: those the retain rules list, and spec.replicas
// when a HorizontalPodAutoscaler in the member scales the object. An error means Flotilla cannot tell (the
// member's autoscalers cannot be read) and the apply waits: applying spec.replicas then could fight an
// autoscaler.
func (m *Member) retained(ctx context.Context, obj *unstructured.Unstructured) ([]fieldPath, error) {
	var paths []fieldPath
	for _, rule := range retainRules {
		for _, p := range rule(obj) {
			if !slices.ContainsFunc(paths, func(q fieldPath) bool { return slices.Equal(p, q) }) {
				paths = append(paths, p)
			}
		}
	}
	if _, has, _ := unstructured.NestedFieldNoCopy(obj.Object, replicasPath...); !has ||
		slices.ContainsFunc(paths, func(p fieldPath) bool { return slices.Equal(p, replicasPath) }) {
		return paths, nil
	}
	scaled, err := m.autoscaled(ctx, obj)
	if err != nil {
		return nil, err
	}
	if scaled {
		paths = append(paths, replicasPath)
	}
	return paths, nil
}

// leaveOut removes from obj the retained fields that the member object has, and returns them: the
// member's values stay. A field the member object lacks (it does not exist yet, say) is applied from the
// template, as a starting value.
func leaveOut(obj, existing *unstructured.Unstructured, retained []fieldPath) []fieldPath {
	var out []fieldPath
	for _, p := range retained {
		if existing == nil {
			continue
		}
		if _, has, _ := unstructured.NestedFieldNoCopy(existing.Object, p...); has {
			unstructured.RemoveNestedField(obj.Object, p...)
			out = append(out, p)
		}
	}
	return out
}

// keepMemberValues puts into obj the member's values of the fields leaveOut took out of it: a plain update
// replaces the whole object, so a field it lacks would be reset rather than left to its owner.
func keepMemberValues(obj, existing *unstructured.Unstructured, fields []fieldPath) {
	for _, p := range fields {
		if value, has, _ := unstructured.NestedFieldCopy(existing.Object, p...); has {
			_ = unstructured.SetNestedField(obj.Object, value, p...) // the path exists in existing: obj's maps are maps
		}
	}
}

// handOver keeps the member's values of the fields Flotilla is about to stop applying. Server-side apply
// removes a field its applier stops sending unless another manager owns it too: Flotilla's first apply of a
// labelled template without spec.replicas, or of one whose autoscaler has not scaled it yet, would reset
// the Deployment to 1 replica. So each field only Flotilla owns is first applied, at the member's value,
// by RetainedFieldManager, which then owns it with Flotilla, and keeps it when Flotilla lets go. Fields
// someone else owns already need nothing. A conflict means someone changed the field since it was read:
// they own it now, which is what is wanted.
func handOver(ctx context.Context, ri dynamic.ResourceInterface, existing *unstructured.Unstructured, fields []fieldPath) error {
	keep := &unstructured.Unstructured{Object: map[string]any{}}
	keep.SetAPIVersion(existing.GetAPIVersion())
	keep.SetKind(existing.GetKind())
	keep.SetNamespace(existing.GetNamespace())
	keep.SetName(existing.GetName())
	handed := false
	for _, p := range fields {
		onlyFlotilla, err := ownedOnlyByFlotilla(existing, p)
		if err != nil {
			return err
		}
		if !onlyFlotilla {
			continue
		}
		value, _, _ := unstructured.NestedFieldCopy(existing.Object, p...)
		if err := unstructured.SetNestedField(keep.Object, value, p...); err != nil {
			return fmt.Errorf("keeping %s of %s %s: %w", p, existing.GetKind(), existing.GetName(), err)
		}
		handed = true
	}
	if !handed {
		return nil
	}
	_, err := ri.Apply(ctx, existing.GetName(), keep, metav1.ApplyOptions{FieldManager: RetainedFieldManager})
	if err != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("handing %s %s's retained fields to the member: %w", existing.GetKind(), existing.GetName(), err)
	}
	return nil
}

// ownedOnlyByFlotilla says whether the member object's managedFields give the field to Flotilla's apply
// and to no other manager.
func ownedOnlyByFlotilla(existing *unstructured.Unstructured, p fieldPath) (bool, error) {
	parts := make([]any, len(p))
	for i, k := range p {
		parts[i] = k
	}
	path, err := fieldpath.MakePath(parts...)
	if err != nil {
		return false, err
	}
	flotilla, others := false, false
	for _, mf := range existing.GetManagedFields() {
		if mf.FieldsV1 == nil {
			continue
		}
		set := &fieldpath.Set{}
		if err := set.FromJSON(bytes.NewReader(mf.FieldsV1.Raw)); err != nil {
			return false, fmt.Errorf("reading the managed fields of %s %s (manager %s): %w", existing.GetKind(), existing.GetName(), mf.Manager, err)
		}
		if !set.Has(path) {
			continue
		}
		if mf.Manager == workv1alpha1.FieldManager && mf.Operation == metav1.ManagedFieldsOperationApply {
			flotilla = true
		} else {
			others = true
		}
	}
	return flotilla && !others, nil
}
