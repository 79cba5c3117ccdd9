package detector

import (
	"context"
	"fmt"

	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// ReasonPriorityClassNotFound (Honoured): the PriorityClass named by schedulePriority does not exist.
const ReasonPriorityClassNotFound = "PriorityClassNotFound"

// schedulePriority resolves p's schedulePriority to the value of the PriorityClass it names, for the
// scheduler's queue. Nil when the policy has none, and when the PriorityClass does not exist: its templates
// are then scheduled at priority 0, and the policy's Honoured condition names the missing class. An error
// reading it is returned, never taken for "missing". (A PriorityClass's value cannot change: the detector
// looks again only when one is created or deleted.)
func (d *Detector) schedulePriority(ctx context.Context, p *Policy) (*workv1alpha1.SchedulePriority, error) {
	pc, err := d.priorityClass(ctx, p.Spec.SchedulePriority)
	if pc == nil || err != nil {
		return nil, err
	}
	return &workv1alpha1.SchedulePriority{Priority: pc.Value}, nil
}

// priorityClass reads the PriorityClass sp names; nil when sp is nil or the class does not exist.
func (d *Detector) priorityClass(ctx context.Context, sp *policyv1alpha1.SchedulePriority) (*schedulingv1.PriorityClass, error) {
	if sp == nil {
		return nil, nil
	}
	pc := &schedulingv1.PriorityClass{}
	err := d.client.Get(ctx, client.ObjectKey{Name: sp.PriorityClassName}, pc)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return pc, nil
}

// priorityHonoured is the Honoured condition as schedulePriority decides it: nil when it can be honoured.
func (d *Detector) priorityHonoured(ctx context.Context, p Policy) (*metav1.Condition, error) {
	sp := p.Spec.SchedulePriority
	pc, err := d.priorityClass(ctx, sp)
	if sp == nil || pc != nil || err != nil {
		return nil, err
	}
	return &metav1.Condition{Type: policyv1alpha1.ConditionHonoured, Status: metav1.ConditionFalse, Reason: ReasonPriorityClassNotFound,
		Message: fmt.Sprintf("schedulePriority: PriorityClass %s not found; the templates are scheduled at priority 0 until it exists", sp.PriorityClassName)}, nil
}
