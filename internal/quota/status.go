package quota

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

// Reasons of the Enforced condition.
const (
	// ReasonEnforced: every static assignment is a ResourceQuota in its member, and the namespace is within
	// spec.overall.
	ReasonEnforced = "Enforced"
	// ReasonOverallExceeded: the namespace's placed templates ask more than spec.overall (placed before the
	// quota, or the quota lowered since); the hub refuses any template change that asks for more.
	ReasonOverallExceeded = "OverallExceeded"
	// ReasonAssignmentsPending: some static assignment is not applied in its member yet, or cannot be.
	ReasonAssignmentsPending = "AssignmentsPending"
)

// updateStatus computes the quota's status and applies it when it differs from what the quota holds.
func (r *Controller) updateStatus(ctx context.Context, q *policyv1alpha1.FederatedResourceQuota, unjoined []string) error {
	bindings := &workv1alpha1.ResourceBindingList{}
	if err := r.Client.List(ctx, bindings, client.InNamespace(q.Namespace)); err != nil {
		return err
	}
	works, err := r.works(ctx, q)
	if err != nil {
		return err
	}
	want := Status(q, bindings.Items, works, unjoined)
	if equality.Semantic.DeepEqual(want, q.Status) {
		return nil
	}
	return client.IgnoreNotFound(scheme.ApplyStatus(ctx, r.Client, q, fieldManager, &want))
}

// Status is a quota's status: overall, what the namespace's bindings ask (overallUsed), each static
// assignment's ResourceQuota as its member reports it through its Work, and Enforced. The condition keeps its
// transition time while it says the same.
func Status(q *policyv1alpha1.FederatedResourceQuota, bindings []workv1alpha1.ResourceBinding, works []workv1alpha1.Work, unjoined []string) policyv1alpha1.FederatedResourceQuotaStatus {
	demands := make([]corev1.ResourceList, len(bindings))
	for i := range bindings {
		demands[i] = BindingDemand(&bindings[i].Spec)
	}
	s := policyv1alpha1.FederatedResourceQuotaStatus{Overall: q.Spec.Overall, OverallUsed: Used(q.Spec.Overall, Add(demands...)),
		Conditions: append([]metav1.Condition(nil), q.Status.Conditions...)}
	byCluster := map[string]*workv1alpha1.Work{}
	for i := range works {
		if cluster, ok := clusterv1alpha1.ClusterOfNamespace(works[i].Namespace); ok {
			byCluster[cluster] = &works[i]
		}
	}
	var pending []string
	for _, a := range q.Spec.StaticAssignments {
		reported, applied, problem := memberReport(byCluster[a.ClusterName])
		s.AggregatedStatus = append(s.AggregatedStatus, policyv1alpha1.ClusterQuotaStatus{ClusterName: a.ClusterName, Hard: reported.Hard, Used: reported.Used})
		switch {
		case slices.Contains(unjoined, a.ClusterName):
			pending = append(pending, a.ClusterName+" (no such cluster)")
		case problem != "":
			pending = append(pending, a.ClusterName+" ("+problem+")")
		case !applied:
			pending = append(pending, a.ClusterName+" (not applied yet)")
		}
	}
	cond := metav1.Condition{Type: policyv1alpha1.FederatedResourceQuotaConditionEnforced, Status: metav1.ConditionTrue, Reason: ReasonEnforced,
		Message:            fmt.Sprintf("the namespace's templates are within spec.overall and %d static assignments are in force", len(q.Spec.StaticAssignments)),
		ObservedGeneration: q.Generation}
	if over := overUsed(s.Overall, s.OverallUsed); len(over) > 0 {
		cond.Status, cond.Reason = metav1.ConditionFalse, ReasonOverallExceeded
		cond.Message = "placed templates ask more than spec.overall (" + strings.Join(over, ", ") + "); changes that ask for more are refused"
	} else if len(pending) > 0 {
		cond.Status, cond.Reason = metav1.ConditionFalse, ReasonAssignmentsPending
		cond.Message = "static assignments not in force: " + clusterv1alpha1.ListInMessage(pending)
	}
	meta.SetStatusCondition(&s.Conditions, cond)
	return s
}

// memberReport reads a static assignment's Work: the member ResourceQuota's status, whether it is applied,
// and what stops it (a conflict with a ResourceQuota Flotilla did not create, say).
func memberReport(w *workv1alpha1.Work) (reported corev1.ResourceQuotaStatus, applied bool, problem string) {
	if w == nil || len(w.Status.ManifestStatuses) == 0 {
		return reported, false, ""
	}
	m := w.Status.ManifestStatuses[0]
	for _, c := range m.Conditions {
		if c.Status == metav1.ConditionFalse && c.Message != "" {
			problem = c.Message
		}
	}
	if m.Status != nil && len(m.Status.Raw) > 0 {
		_ = json.Unmarshal(m.Status.Raw, &reported) // a status that does not read as a ResourceQuota's reports nothing
	}
	return reported, m.Applied, problem
}

// overUsed lists the resources whose use is over the cap, "cpu 3/2".
func overUsed(overall, used corev1.ResourceList) []string {
	var out []string
	for _, name := range sortedNames(overall) {
		if u, ok := used[name]; ok && u.Cmp(overall[name]) > 0 {
			limit := overall[name]
			out = append(out, fmt.Sprintf("%s %s/%s", name, u.String(), limit.String()))
		}
	}
	return out
}
