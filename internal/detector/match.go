package detector

import (
	"cmp"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// Policy is a PropagationPolicy or ClusterPropagationPolicy, seen the same way.
type Policy struct {
	// Namespace is empty for a ClusterPropagationPolicy.
	Namespace, Name string
	Spec            *policyv1alpha1.PropagationSpec
}

// Cluster reports whether p is a ClusterPropagationPolicy.
func (p Policy) Cluster() bool { return p.Namespace == "" }

func (p Policy) priority() int32 {
	if p.Spec.Priority == nil {
		return 0
	}
	return *p.Spec.Priority
}

// Precision of a selector match: a name beats a label selector beats the kind alone.
const (
	noMatch = iota
	matchKind
	matchLabels
	matchName
)

// precision returns how precisely the policy selects the template (noMatch when it does not).
func (p Policy) precision(t *unstructured.Unstructured) int {
	best := noMatch
	if !p.Cluster() && p.Namespace != t.GetNamespace() {
		return noMatch // a PropagationPolicy sees only its own namespace
	}
	for _, s := range p.Spec.ResourceSelectors {
		if reachable(p, s, t) {
			best = max(best, selectorPrecision(s, t))
		}
	}
	return best
}

// selectorPrecision compares group and kind, not version: one object served under two versions of its kind
// (autoscaling/v1 and v2, a CRD's v1beta1 and v1) is one template, whichever version a selector names.
func selectorPrecision(s policyv1alpha1.ResourceSelector, t *unstructured.Unstructured) int {
	gv, err := schema.ParseGroupVersion(s.APIVersion)
	if err != nil || gv.WithKind(s.Kind).GroupKind() != t.GroupVersionKind().GroupKind() {
		return noMatch
	}
	if s.Namespace != "" && s.Namespace != t.GetNamespace() {
		return noMatch
	}
	switch {
	case s.Name != "":
		if s.Name == t.GetName() {
			return matchName
		}
		return noMatch
	case s.LabelSelector != nil:
		sel, err := metav1.LabelSelectorAsSelector(s.LabelSelector)
		if err != nil || !sel.Matches(labels.Set(t.GetLabels())) {
			return noMatch
		}
		return matchLabels
	}
	return matchKind
}

// Choose returns the policy that claims template t, or nil: the highest priority, then the most precise
// selector, then a PropagationPolicy before a ClusterPropagationPolicy, then the first name in alphabetical
// order. A template already claimed by a policy that still matches stays with it unless the winner has a
// higher priority and may preempt (preemption: Always).
func Choose(t *unstructured.Unstructured, policies []Policy, claimedBy *Policy) *Policy {
	type candidate struct {
		p         Policy
		precision int
	}
	var matches []candidate
	for _, p := range policies {
		if n := p.precision(t); n != noMatch {
			matches = append(matches, candidate{p, n})
		}
	}
	if len(matches) == 0 {
		return nil
	}
	slices.SortFunc(matches, func(a, b candidate) int {
		return cmp.Or(
			cmp.Compare(b.p.priority(), a.p.priority()),
			cmp.Compare(b.precision, a.precision),
			cmp.Compare(boolRank(a.p.Cluster()), boolRank(b.p.Cluster())),
			cmp.Compare(a.p.Name, b.p.Name),
		)
	})
	winner := matches[0].p
	if claimedBy != nil {
		for _, m := range matches {
			if m.p.Namespace == claimedBy.Namespace && m.p.Name == claimedBy.Name && m.p.Cluster() == claimedBy.Cluster() {
				if winner.priority() > m.p.priority() && winner.Spec.Preemption == policyv1alpha1.PreemptAlways {
					return &winner
				}
				return &m.p
			}
		}
	}
	return &winner
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}
