package mcs

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/registration"
)

// reasonInvalidConsumers: the consumers annotation does not parse; nothing placed is changed until it does.
const reasonInvalidConsumers mcsv1alpha1.ServiceExportConditionReason = "InvalidConsumers"

// ConditionEndpointsValid is Flotilla's condition on a ServiceExport that says whether consumers get every
// endpoint the providers report: False when endpointCheck refused some (ReasonEndpointsRefused) or a
// provider's namespace holds all the reports its ResourceQuota allows (ReasonReportsAtQuota).
const ConditionEndpointsValid mcsv1alpha1.ServiceExportConditionType = "EndpointsValid"

// Reasons of ConditionEndpointsValid.
const (
	ReasonEndpointsValid   mcsv1alpha1.ServiceExportConditionReason = "EndpointsValid"
	ReasonEndpointsRefused mcsv1alpha1.ServiceExportConditionReason = "EndpointsRefused"
	ReasonReportsAtQuota   mcsv1alpha1.ServiceExportConditionReason = "ReportsAtQuota"
)

// exportStatus collects, during one reconcile, what the ServiceExport's conditions say.
type exportStatus struct {
	invalidReason  mcsv1alpha1.ServiceExportConditionReason
	invalidMessage string
	conflicts      []Conflict
	consumers      []string
	observed       *observation
}

func (s *exportStatus) invalid(reason mcsv1alpha1.ServiceExportConditionReason, message string) {
	s.invalidReason, s.invalidMessage = reason, message
}

// patchStatus sets the ServiceExport's Valid, Conflict and Ready conditions (all of them this controller's)
// by one merge patch, only when they changed.
func (r *ExportController) patchStatus(ctx context.Context, export *mcsv1alpha1.ServiceExport, s *exportStatus, reconcileErr error) error {
	before := export.DeepCopy()
	set := func(t mcsv1alpha1.ServiceExportConditionType, status metav1.ConditionStatus, reason mcsv1alpha1.ServiceExportConditionReason, message string) {
		meta.SetStatusCondition(&export.Status.Conditions, metav1.Condition{Type: string(t), Status: status, Reason: string(reason),
			Message: message, ObservedGeneration: export.Generation})
	}
	if s.invalidReason != "" {
		set(mcsv1alpha1.ServiceExportConditionValid, metav1.ConditionFalse, s.invalidReason, s.invalidMessage)
	} else if s.observed != nil {
		set(mcsv1alpha1.ServiceExportConditionValid, metav1.ConditionTrue, mcsv1alpha1.ServiceExportReasonValid,
			"exported from "+clusterList(s.observed.providerClusters()))
	}
	if len(s.conflicts) > 0 {
		messages := make([]string, len(s.conflicts))
		for i, c := range s.conflicts {
			messages[i] = c.Message
		}
		set(mcsv1alpha1.ServiceExportConditionConflict, metav1.ConditionTrue, s.conflicts[0].Reason, strings.Join(messages, "; "))
	} else if s.observed != nil {
		set(mcsv1alpha1.ServiceExportConditionConflict, metav1.ConditionFalse, mcsv1alpha1.ServiceExportReasonNoConflicts, "the providers agree")
	}
	switch {
	case reconcileErr != nil:
		set(mcsv1alpha1.ServiceExportConditionReady, metav1.ConditionFalse, mcsv1alpha1.ServiceExportReasonFailed, reconcileErr.Error())
	case s.invalidReason != "":
		set(mcsv1alpha1.ServiceExportConditionReady, metav1.ConditionFalse, mcsv1alpha1.ServiceExportReasonPending, s.invalidMessage)
	case s.observed != nil:
		message := fmt.Sprintf("imported by %s", clusterList(s.consumers))
		if len(s.observed.withdrawn) > 0 {
			message += fmt.Sprintf("; endpoints of %s withdrawn: unreachable", clusterList(s.observed.withdrawn))
		}
		set(mcsv1alpha1.ServiceExportConditionReady, metav1.ConditionTrue, mcsv1alpha1.ServiceExportReasonExported, message)
	}
	if s.observed != nil {
		status, reason, message := endpointsValid(s.observed)
		set(ConditionEndpointsValid, status, reason, message)
		if was := meta.FindStatusCondition(before.Status.Conditions, string(ConditionEndpointsValid)); status == metav1.ConditionFalse &&
			(was == nil || was.Message != message) {
			ctrl.LoggerFrom(ctx).Info("endpoints of an exported Service are not all imported", "reason", reason, "detail", message)
		}
	}
	if equality.Semantic.DeepEqual(before.Status, export.Status) {
		return nil
	}
	return r.Client.Status().Patch(ctx, export, client.MergeFrom(before), client.FieldOwner(fieldManager))
}

func clusterList(names []string) string {
	if len(names) == 0 {
		return "no cluster"
	}
	return clusterv1alpha1.ListInMessage(names)
}

// endpointsValid is the EndpointsValid condition of an observation: what the checks refused of each
// provider's reports, and which providers' reports are at their quota.
func endpointsValid(obs *observation) (metav1.ConditionStatus, mcsv1alpha1.ServiceExportConditionReason, string) {
	var parts []string
	for _, cluster := range slices.Sorted(maps.Keys(obs.refused)) {
		parts = append(parts, fmt.Sprintf("cluster %s: %s", cluster, obs.refused[cluster]))
	}
	reason := ReasonEndpointsRefused
	if len(parts) == 0 {
		reason = ReasonReportsAtQuota
	}
	if len(obs.atQuota) > 0 {
		parts = append(parts, fmt.Sprintf("reports at their quota (ResourceQuota %s in the cluster's namespace; more are refused, "+
			"so endpoints may be missing): %s", registration.ReportQuota, clusterList(obs.atQuota)))
	}
	if len(parts) == 0 {
		return metav1.ConditionTrue, ReasonEndpointsValid, "every reported endpoint passed the checks"
	}
	return metav1.ConditionFalse, reason, strings.Join(parts, "; ")
}
