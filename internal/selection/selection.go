// Package selection says whether a selector picks an object: a policy's resource selectors a template (Policy,
// with the rules that keep Flotilla's own objects and the kube-* namespaces on the hub; used by the detector
// for propagation policies and by override for override policies), a cluster affinity a cluster (used by the
// scheduler and by override rules), and which of several propagation policies claims a template (Choose,
// ClaimOf, and the policy's part of its binding, Propagation.BindingSpec; used by the detector and by
// flotilla diff). It is pure: no client, no cache, so every user matches the same way.
package selection

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// Precision of a resource selector's match: a name beats a label selector beats the kind alone.
type Precision int

const (
	NoMatch Precision = iota
	MatchKind
	MatchLabels
	MatchName
)

// Resource returns how precisely s selects template t (NoMatch when it does not). It compares group and
// kind, not version: one object served under two versions of its kind (autoscaling/v1 and v2, a CRD's
// v1beta1 and v1) is one template, whichever version a selector names.
func Resource(s policyv1alpha1.ResourceSelector, t *unstructured.Unstructured) Precision {
	gv, err := schema.ParseGroupVersion(s.APIVersion)
	if err != nil || gv.WithKind(s.Kind).GroupKind() != t.GroupVersionKind().GroupKind() {
		return NoMatch
	}
	if s.Namespace != "" && s.Namespace != t.GetNamespace() {
		return NoMatch
	}
	switch {
	case s.Name != "":
		if s.Name == t.GetName() {
			return MatchName
		}
		return NoMatch
	case s.LabelSelector != nil:
		if !labelsMatch(s.LabelSelector, t.GetLabels()) {
			return NoMatch
		}
		return MatchLabels
	}
	return MatchKind
}

// Cluster reports whether a cluster qualifies under an affinity: in clusterNames (when set), matching the
// label and field selectors (when set), and not excluded.
func Cluster(a *policyv1alpha1.ClusterAffinity, c *clusterv1alpha1.Cluster) bool {
	if slices.Contains(a.ExcludeClusters, c.Name) {
		return false
	}
	if len(a.ClusterNames) > 0 && !slices.Contains(a.ClusterNames, c.Name) {
		return false
	}
	if a.LabelSelector != nil && !labelsMatch(a.LabelSelector, c.Labels) {
		return false
	}
	if a.FieldSelector != nil {
		for _, e := range a.FieldSelector.MatchExpressions {
			var values []string
			switch e.Key {
			case "provider":
				values = []string{c.Spec.Provider}
			case "region":
				values = []string{c.Spec.Region}
			case "zone":
				values = c.Spec.Zones
			}
			in := slices.ContainsFunc(values, func(v string) bool { return slices.Contains(e.Values, v) })
			if (e.Operator == corev1.NodeSelectorOpIn) != in {
				return false
			}
		}
	}
	return true
}

// labelsMatch reports whether set matches selector; an invalid selector (admission refuses those) matches
// nothing.
func labelsMatch(selector *metav1.LabelSelector, set map[string]string) bool {
	sel, err := metav1.LabelSelectorAsSelector(selector)
	return err == nil && sel.Matches(labels.Set(set))
}
