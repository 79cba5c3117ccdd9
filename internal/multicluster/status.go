package multicluster

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// reasonInvalidConsumers: the consumers annotation does not parse; nothing placed is changed until it does.
const reasonInvalidConsumers mcsv1alpha1.ServiceExportConditionReason = "InvalidConsumers"

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
