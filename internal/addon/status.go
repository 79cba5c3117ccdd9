package addon

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-io/flotilla/api/addon/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

// Reasons of the conditions the add-on controller writes.
const (
	ReasonRendered           = "Rendered"
	ReasonRenderFailed       = "RenderFailed"
	ReasonInstalling         = "Installing"
	ReasonWaitingForRollout  = "WaitingForRollout"
	ReasonApplying           = "Applying"
	ReasonApplied            = "Applied"
	ReasonRollingOut         = "RollingOut"
	ReasonPlacementUnsettled = "PlacementNotSettled"
	ReasonUpToDate           = "UpToDate"
	ReasonClustersDegraded   = "ClustersDegraded"
	ReasonAllAvailable       = "AllAvailable"
)

func condition(t string, ok bool, reason, message string, generation int64) metav1.Condition {
	c := metav1.Condition{Type: t, Status: metav1.ConditionFalse, Reason: reason, Message: message, ObservedGeneration: generation}
	if ok {
		c.Status = metav1.ConditionTrue
	}
	return c
}

// clusterStatus is the part of a ClusterAddOn's status the add-on controller owns.
type clusterStatus struct {
	ObservedGeneration int64                        `json:"observedGeneration,omitempty"`
	Namespace          string                       `json:"namespace,omitempty"`
	Revision           string                       `json:"revision,omitempty"`
	ConfigReferences   []addonv1alpha1.ConfigStatus `json:"configReferences,omitempty"`
	Conditions         []metav1.Condition           `json:"conditions,omitempty"`
}

// writeClusterStatus reports a cluster's rendering on its ClusterAddOn: the namespace, the revision its
// Work carries, the configs it runs with, Degraded (the template does not render) and Progressing (the
// Work does not carry the current rendering, or is not applied and healthy yet).
func (r *Controller) writeClusterStatus(ctx context.Context, t *target, onTarget bool) error {
	ca := t.ca
	want := clusterStatus{ObservedGeneration: ca.Generation, Namespace: ca.Status.Namespace, Revision: "", ConfigReferences: ca.Status.ConfigReferences}
	if t.work != nil {
		want.Revision = t.work.Annotations[workv1alpha1.AnnotationRevision]
	}
	var degraded, progressing metav1.Condition
	if t.degraded != "" {
		degraded = condition(addonv1alpha1.ConditionDegraded, true, ReasonRenderFailed, t.degraded+"; the cluster keeps what it runs", ca.Generation)
		progressing = condition(addonv1alpha1.ConditionProgressing, false, ReasonRenderFailed, "nothing is rolled out until the add-on renders for this cluster", ca.Generation)
	} else {
		want.Namespace, want.ConfigReferences = t.rendered.Namespace, t.configs
		degraded = condition(addonv1alpha1.ConditionDegraded, false, ReasonRendered, "the template renders for this cluster", ca.Generation)
		healthy, why := workHealthy(t.work)
		switch {
		case t.work == nil || want.Revision == "":
			progressing = condition(addonv1alpha1.ConditionProgressing, true, ReasonInstalling, "installing revision "+t.rendered.Hash, ca.Generation)
		case want.Revision != t.rendered.Hash:
			progressing = condition(addonv1alpha1.ConditionProgressing, true, ReasonWaitingForRollout,
				fmt.Sprintf("runs revision %s; revision %s waits for the rollout to reach the cluster", want.Revision, t.rendered.Hash), ca.Generation)
		case !healthy:
			progressing = condition(addonv1alpha1.ConditionProgressing, true, ReasonApplying, fmt.Sprintf("revision %s: %s", want.Revision, why), ca.Generation)
		default:
			progressing = condition(addonv1alpha1.ConditionProgressing, false, ReasonApplied, "revision "+want.Revision+" is applied and healthy", ca.Generation)
		}
	}
	conditions := slices.Clone(ca.Status.Conditions)
	meta.SetStatusCondition(&conditions, degraded)
	meta.SetStatusCondition(&conditions, progressing)
	current := clusterStatus{ObservedGeneration: ca.Status.ObservedGeneration, Namespace: ca.Status.Namespace, Revision: ca.Status.Revision,
		ConfigReferences: ca.Status.ConfigReferences, Conditions: ca.Status.Conditions}
	want.Conditions = conditions
	if equality.Semantic.DeepEqual(want, current) {
		return nil
	}
	previous := meta.FindStatusCondition(ca.Status.Conditions, addonv1alpha1.ConditionDegraded)
	if t.degraded != "" && (previous == nil || previous.Message != degraded.Message) {
		r.Recorder.Eventf(ca, nil, "Warning", ReasonRenderFailed, "Render", "%s", t.degraded)
	}
	want.Conditions = []metav1.Condition{*meta.FindStatusCondition(conditions, addonv1alpha1.ConditionDegraded),
		*meta.FindStatusCondition(conditions, addonv1alpha1.ConditionProgressing)}
	return client.IgnoreNotFound(scheme.ApplyStatus(ctx, r.Client, ca, fieldManager, &want))
}

// writeStatus reports the add-on as a whole: the clusters it is enabled and available on, its rollouts,
// Progressing (a rollout or a cluster is not done, or a placement's decision is not settled) and Degraded
// (clusters where it does not render or is not available).
func (r *Controller) writeStatus(ctx context.Context, a *addonv1alpha1.AddOn, current []addonv1alpha1.ClusterAddOn, targets []*target, p plan, hold string) error {
	want := addonv1alpha1.AddOnStatus{ObservedGeneration: a.Generation, Rollouts: p.rollouts, Conditions: slices.Clone(a.Status.Conditions)}
	var bad []string
	for i := range current {
		ca := &current[i]
		if ca.DeletionTimestamp != nil {
			continue
		}
		want.EnabledClusters++
		cluster, _ := clusterv1alpha1.ClusterOfNamespace(ca.Namespace)
		available := meta.FindStatusCondition(ca.Status.Conditions, addonv1alpha1.ConditionAvailable)
		if available != nil && available.Status == metav1.ConditionTrue {
			want.AvailableClusters++
		} else if available != nil && available.Status == metav1.ConditionFalse {
			bad = append(bad, cluster)
		}
	}
	var installing []string
	for _, t := range targets {
		if t.degraded != "" && !slices.Contains(bad, t.cluster) {
			bad = append(bad, t.cluster)
		}
		if t.rendered != nil && (t.work == nil || t.work.Annotations[workv1alpha1.AnnotationRevision] != t.rendered.Hash) {
			installing = append(installing, t.cluster)
		}
	}
	slices.Sort(bad)
	slices.Sort(installing)
	var progressing metav1.Condition
	switch {
	case hold != "":
		progressing = condition(addonv1alpha1.ConditionProgressing, true, ReasonPlacementUnsettled, hold, a.Generation)
	case len(p.incomplete) > 0 || len(installing) > 0:
		msg := []string{}
		if len(p.incomplete) > 0 {
			msg = append(msg, "rolling out on placement "+strings.Join(p.incomplete, ", "))
		}
		if len(installing) > 0 {
			msg = append(msg, "clusters not on their current revision: "+clusterv1alpha1.ListInMessage(installing))
		}
		progressing = condition(addonv1alpha1.ConditionProgressing, true, ReasonRollingOut, strings.Join(msg, "; "), a.Generation)
	default:
		progressing = condition(addonv1alpha1.ConditionProgressing, false, ReasonUpToDate, "every enabled cluster runs the current revision", a.Generation)
	}
	degraded := condition(addonv1alpha1.ConditionDegraded, false, ReasonAllAvailable, "no cluster is degraded or unavailable", a.Generation)
	if len(bad) > 0 {
		degraded = condition(addonv1alpha1.ConditionDegraded, true, ReasonClustersDegraded,
			"degraded or not available on "+clusterv1alpha1.ListInMessage(bad), a.Generation)
	}
	meta.SetStatusCondition(&want.Conditions, progressing)
	meta.SetStatusCondition(&want.Conditions, degraded)
	if equality.Semantic.DeepEqual(want, a.Status) {
		return nil
	}
	return client.IgnoreNotFound(scheme.ApplyStatus(ctx, r.Client, a, fieldManager, &want))
}
