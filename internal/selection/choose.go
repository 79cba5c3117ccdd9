package selection

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// Propagation is a PropagationPolicy or ClusterPropagationPolicy, seen the same way.
type Propagation struct {
	// Namespace is empty for a ClusterPropagationPolicy.
	Namespace, Name string
	Spec            *policyv1alpha1.PropagationSpec
}

// Cluster reports whether p is a ClusterPropagationPolicy.
func (p Propagation) Cluster() bool { return p.Namespace == "" }

func (p Propagation) priority() int32 {
	if p.Spec.Priority == nil {
		return 0
	}
	return *p.Spec.Priority
}

// Choose returns the policy that claims template t, or nil (the detector's rule, and `flotilla diff`'s), in Karmada's order: a PropagationPolicy (in the
// template's namespace) before any ClusterPropagationPolicy whatever their priorities, then the highest
// priority, then the most precise selector, then the first name in alphabetical order. A template already
// claimed by a policy that still matches stays with it unless the winner may preempt (preemption: Always):
// a policy of the same kind with a strictly higher priority, or a PropagationPolicy taking the template from
// a ClusterPropagationPolicy, whatever the priorities. A ClusterPropagationPolicy never takes a template from
// a PropagationPolicy that still selects it (the order puts the PropagationPolicy first).
func Choose(t *unstructured.Unstructured, policies []Propagation, claimedBy *Propagation) *Propagation {
	type candidate struct {
		p         Propagation
		precision Precision
	}
	var matches []candidate
	for _, p := range policies {
		if n := Policy(p.Namespace, p.Spec.ResourceSelectors, t); n != NoMatch {
			matches = append(matches, candidate{p, n})
		}
	}
	if len(matches) == 0 {
		return nil
	}
	slices.SortFunc(matches, func(a, b candidate) int {
		return cmp.Or(
			cmp.Compare(boolRank(a.p.Cluster()), boolRank(b.p.Cluster())),
			cmp.Compare(b.p.priority(), a.p.priority()),
			cmp.Compare(b.precision, a.precision),
			cmp.Compare(a.p.Name, b.p.Name),
		)
	})
	winner := matches[0].p
	if claimedBy != nil {
		for _, m := range matches {
			if m.p.Namespace == claimedBy.Namespace && m.p.Name == claimedBy.Name && m.p.Cluster() == claimedBy.Cluster() {
				if winner.Spec.Preemption == policyv1alpha1.PreemptAlways &&
					(winner.priority() > m.p.priority() || (!winner.Cluster() && m.p.Cluster())) {
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

// ClaimOf reads the policy that claimed template t from its labels (the detector's claim), nil when none did.
func ClaimOf(t *unstructured.Unstructured) *Propagation {
	l := t.GetLabels()
	if name := l[policyv1alpha1.LabelClusterPropagationPolicy]; name != "" {
		return &Propagation{Name: name}
	}
	if name := l[policyv1alpha1.LabelPropagationPolicyName]; name != "" {
		return &Propagation{Namespace: l[policyv1alpha1.LabelPropagationPolicyNamespace], Name: name}
	}
	return nil
}

// BindingSpec is what policy p puts in the binding of template t: the template's reference and the policy's
// placement, failover, rollout and the rest. Replicas, their requests and the schedule priority come from
// elsewhere (the interpreter, the PriorityClass), and clusters from the scheduler.
func (p Propagation) BindingSpec(t *unstructured.Unstructured) workv1alpha1.ResourceBindingSpec {
	return workv1alpha1.ResourceBindingSpec{
		Resource: workv1alpha1.ObjectReference{
			APIVersion: t.GetAPIVersion(), Kind: t.GetKind(), Namespace: t.GetNamespace(), Name: t.GetName(), UID: t.GetUID(),
		},
		PropagateDeps:               p.Spec.PropagateDeps,
		Placement:                   p.Spec.Placement.DeepCopy(),
		SchedulerName:               p.Spec.SchedulerName,
		Failover:                    p.Spec.Failover.DeepCopy(),
		Rollout:                     p.Spec.Rollout.DeepCopy(),
		PlacementRef:                p.Spec.PlacementRef.DeepCopy(),
		ConflictResolution:          p.Spec.ConflictResolution,
		Suspension:                  p.Spec.Suspension.DeepCopy(),
		PreserveResourcesOnDeletion: p.Spec.PreserveResourcesOnDeletion,
	}
}
