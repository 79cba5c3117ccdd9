// Package override changes a rendered manifest for one cluster according to the OverridePolicies and
// ClusterOverridePolicies that select it. As in Karmada, ClusterOverridePolicies apply first, then
// OverridePolicies; within each kind from the least to the most precise selector (kind or none, labels, name),
// then in name order, so the most precise policy has the last word; within a rule the overriders apply in a fixed order: image, command, args, labels,
// annotations, field, plaintext. Either every change applies or none does: an error leaves the manifest as it
// was and says which policy and overrider failed.
package override

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/selection"
)

// Policy is an OverridePolicy (Namespace set) or a ClusterOverridePolicy.
type Policy struct {
	Namespace, Name string
	Spec            *policyv1alpha1.OverrideSpec
}

// ID names the policy as the Work records it.
func (p Policy) ID() string {
	if p.Namespace == "" {
		return "ClusterOverridePolicy/" + p.Name
	}
	return "OverridePolicy/" + p.Namespace + "/" + p.Name
}

// Sort orders policies as they apply: cluster policies first, then by namespace and name.
func Sort(policies []Policy) {
	slices.SortFunc(policies, func(a, b Policy) int {
		if (a.Namespace == "") != (b.Namespace == "") {
			if a.Namespace == "" {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
}

// precision reports how precisely a policy selects the template the manifest was rendered from
// (selection.NoMatch when it does not), by the rule of propagation policies (selection.Policy). Omitted
// selectors select everything the policy can see and rank as a selector by kind alone, as Karmada's "match
// all" does. An OverridePolicy sees only its own namespace.
// Selects says whether the policy selects the manifest (for some cluster, whatever its rules target).
func (p Policy) Selects(m *unstructured.Unstructured) bool {
	return p.precision(m) != selection.NoMatch
}

func (p Policy) precision(m *unstructured.Unstructured) selection.Precision {
	if p.Namespace != "" && p.Namespace != m.GetNamespace() {
		return selection.NoMatch
	}
	if len(p.Spec.ResourceSelectors) == 0 {
		return selection.MatchKind
	}
	return selection.Policy(p.Namespace, p.Spec.ResourceSelectors, m)
}

// Apply changes manifest for cluster with every rule of policies (sorted with Sort) that selects it and
// targets the cluster, and returns the IDs of the policies that changed something, in the order they
// applied: cluster policies first, then from the least to the most precise selector, then by name. The
// selection is decided on the manifest as rendered, before any override changes its labels. On error the
// manifest is unchanged.
func Apply(manifest *unstructured.Unstructured, cluster *clusterv1alpha1.Cluster, policies []Policy) ([]string, error) {
	type match struct {
		p         Policy
		precision selection.Precision
	}
	var matches []match
	for _, p := range policies {
		if n := p.precision(manifest); n != selection.NoMatch {
			matches = append(matches, match{p, n})
		}
	}
	// Stable: policies of one kind and precision keep Sort's name order.
	slices.SortStableFunc(matches, func(a, b match) int {
		if (a.p.Namespace == "") != (b.p.Namespace == "") {
			if a.p.Namespace == "" {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.precision, b.precision)
	})
	work := manifest.DeepCopy()
	var applied []string
	for _, m := range matches {
		p := m.p
		used := false
		for i, rule := range p.Spec.OverrideRules {
			if rule.TargetCluster != nil && !selection.Cluster(rule.TargetCluster, cluster) {
				continue
			}
			if err := applyOverriders(work, &rule.Overriders); err != nil {
				return nil, fmt.Errorf("%s, overrideRules[%d]: %w", p.ID(), i, err)
			}
			if err := sameIdentity(manifest, work); err != nil {
				return nil, fmt.Errorf("%s, overrideRules[%d]: %w", p.ID(), i, err)
			}
			used = true
		}
		if used {
			applied = append(applied, p.ID())
		}
	}
	manifest.Object = work.Object
	return applied, nil
}

// sameIdentity refuses a result that is another object than the template: a changed group, kind, name or
// namespace would apply (and later delete) an object that no template describes, possibly in a namespace
// the policy's author cannot reach. Admission refuses overriders that touch these fields; this also holds
// for policies admitted before that rule existed or that reach them another way.
func sameIdentity(template, result *unstructured.Unstructured) error {
	want, got := template.GroupVersionKind().GroupKind(), result.GroupVersionKind().GroupKind()
	for _, f := range []struct{ field, want, got string }{
		{"the API group", want.Group, got.Group},
		{"kind", want.Kind, got.Kind},
		{"metadata.name", template.GetName(), result.GetName()},
		{"metadata.namespace", template.GetNamespace(), result.GetNamespace()},
	} {
		if f.want != f.got {
			return fmt.Errorf("an override may not change %s (%q to %q)", f.field, f.want, f.got)
		}
	}
	return nil
}

func applyOverriders(m *unstructured.Unstructured, o *policyv1alpha1.Overriders) error {
	for i, io := range o.ImageOverrider {
		if err := overrideImages(m, io); err != nil {
			return fmt.Errorf("imageOverrider[%d]: %w", i, err)
		}
	}
	for i, c := range o.CommandOverrider {
		if err := overrideCommandArgs(m, c, "command"); err != nil {
			return fmt.Errorf("commandOverrider[%d]: %w", i, err)
		}
	}
	for i, c := range o.ArgsOverrider {
		if err := overrideCommandArgs(m, c, "args"); err != nil {
			return fmt.Errorf("argsOverrider[%d]: %w", i, err)
		}
	}
	for _, l := range o.LabelsOverrider {
		m.SetLabels(overrideMap(m.GetLabels(), l))
	}
	for _, a := range o.AnnotationsOverrider {
		m.SetAnnotations(overrideMap(m.GetAnnotations(), a))
	}
	for i, f := range o.FieldOverrider {
		if err := overrideField(m, f); err != nil {
			return fmt.Errorf("fieldOverrider[%d]: %w", i, err)
		}
	}
	if len(o.Plaintext) > 0 {
		if err := overridePlaintext(m, o.Plaintext); err != nil {
			return fmt.Errorf("plaintext: %w", err)
		}
	}
	return nil
}

// overrideMap adds (or overwrites), replaces (existing keys only) or removes keys of labels or annotations.
func overrideMap(current map[string]string, o policyv1alpha1.LabelAnnotationOverrider) map[string]string {
	if current == nil {
		current = map[string]string{}
	}
	for k, v := range o.Value {
		switch o.Operator {
		case policyv1alpha1.OverriderOpAdd:
			current[k] = v
		case policyv1alpha1.OverriderOpReplace:
			if _, ok := current[k]; ok {
				current[k] = v
			}
		case policyv1alpha1.OverriderOpRemove:
			delete(current, k)
		}
	}
	return current
}
