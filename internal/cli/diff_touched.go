package cli

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/override"
	"github.com/flotilla-io/flotilla/internal/selection"
)

// touched are the templates the changes may move or change, in the order found: those of the file, those a
// changed propagation policy selects (before or after), and those of the bindings a changed override policy
// applies to.
func (h *hubView) touched(ctx context.Context, changes []change, before, after policySet) (map[objectKey]*templatePair, []objectKey, error) {
	templates := map[objectKey]*templatePair{}
	var order []objectKey
	add := func(before, after *unstructured.Unstructured) {
		key := keyOf(after)
		if _, ok := templates[key]; !ok {
			order = append(order, key)
		}
		templates[key] = &templatePair{before: before, after: after}
	}
	for _, c := range changes {
		if !isPolicy(c.after) && !selection.FlotillaGroup(c.after.GroupVersionKind().Group) {
			add(c.before, c.after)
		}
	}
	for _, c := range changes {
		if !isPolicy(c.after) {
			continue
		}
		ns, name := c.after.GetNamespace(), c.after.GetName()
		var found []*unstructured.Unstructured
		var err error
		switch c.after.GetKind() {
		case "PropagationPolicy", "ClusterPropagationPolicy":
			found, err = h.selectedBy(ctx, ns, name, before, after)
		default:
			found, err = h.overridden(ctx, ns, name, before, after)
		}
		if err != nil {
			return nil, nil, err
		}
		for _, t := range found {
			if _, ok := templates[keyOf(t)]; !ok {
				add(t, t)
			}
		}
	}
	return templates, order, nil
}

// selectedBy lists the hub's templates the propagation policy ns/name selects before or after the change.
func (h *hubView) selectedBy(ctx context.Context, ns, name string, sets ...policySet) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	seen := map[objectKey]bool{}
	for _, s := range sets {
		i := slices.IndexFunc(s.propagation, func(p selection.Propagation) bool { return p.Namespace == ns && p.Name == name })
		if i < 0 {
			continue
		}
		p := s.propagation[i]
		for _, sel := range p.Spec.ResourceSelectors {
			gv, err := schema.ParseGroupVersion(sel.APIVersion)
			if err != nil {
				continue // admission refuses such a selector
			}
			mapping, err := h.mapper.RESTMapping(gv.WithKind(sel.Kind).GroupKind(), gv.Version)
			if meta.IsNoMatchError(err) {
				continue // a kind the hub does not serve (yet) has no template
			} else if err != nil {
				return nil, err
			}
			listNS := p.Namespace
			if listNS == "" {
				listNS = sel.Namespace
			}
			list, err := h.dynamic.Resource(mapping.Resource).Namespace(listNS).List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, fmt.Errorf("listing the %s policy %s selects: %w", sel.Kind, name, err)
			}
			for j := range list.Items {
				t := &list.Items[j]
				if !seen[keyOf(t)] && selection.Policy(p.Namespace, p.Spec.ResourceSelectors, t) != selection.NoMatch {
					seen[keyOf(t)] = true
					out = append(out, t)
				}
			}
		}
	}
	return out, nil
}

// overridden lists the templates of the hub's bindings the override policy ns/name applies to, before or
// after the change: only a placed template has copies for an override to change.
func (h *hubView) overridden(ctx context.Context, ns, name string, sets ...policySet) ([]*unstructured.Unstructured, error) {
	var refs []workv1alpha1.ObjectReference
	rbs := &workv1alpha1.ResourceBindingList{}
	if err := h.client.List(ctx, rbs, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	for _, b := range rbs.Items {
		refs = append(refs, b.Spec.Resource)
	}
	if ns == "" {
		crbs := &workv1alpha1.ClusterResourceBindingList{}
		if err := h.client.List(ctx, crbs); err != nil {
			return nil, err
		}
		for _, b := range crbs.Items {
			refs = append(refs, b.Spec.Resource)
		}
	}
	var out []*unstructured.Unstructured
	for _, ref := range refs {
		t, err := h.template(ctx, ref)
		if err != nil {
			return nil, err
		}
		if t == nil {
			continue // the template is being deleted with its binding
		}
		for _, s := range sets {
			i := slices.IndexFunc(s.overrides, func(p override.Policy) bool { return p.Namespace == ns && p.Name == name })
			if i >= 0 && s.overrides[i].Selects(t) {
				out = append(out, t)
				break
			}
		}
	}
	return out, nil
}

// template reads the template a binding refers to; nil when it is gone.
func (h *hubView) template(ctx context.Context, ref workv1alpha1.ObjectReference) (*unstructured.Unstructured, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, err
	}
	mapping, err := h.mapper.RESTMapping(gv.WithKind(ref.Kind).GroupKind(), gv.Version)
	if err != nil {
		return nil, err
	}
	t, err := h.dynamic.Resource(mapping.Resource).Namespace(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return t, err
}
