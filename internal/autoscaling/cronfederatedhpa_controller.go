package autoscaling

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	autoscalingv1alpha1 "github.com/flotilla-io/flotilla/api/autoscaling/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// Reasons of a CronFederatedHPA's events.
const (
	ReasonScaled      = "ScaleSucceeded"
	ReasonScaleFailed = "ScaleFailed"
	ReasonBadRule     = "InvalidRule"
)

// cronFieldManager owns what CronFederatedHPAs set (a template's spec.replicas, a FederatedHPA's bounds) and
// their status.
var cronFieldManager = workv1alpha1.ControllerFieldManager("cronfederatedhpa")

// CronFederatedHPAController runs CronFederatedHPAs' rules at their schedules.
//
// +kubebuilder:rbac:groups=autoscaling.flotilla.io,resources=cronfederatedhpas,verbs=get;list;watch
// +kubebuilder:rbac:groups=autoscaling.flotilla.io,resources=cronfederatedhpas/status,verbs=patch
// +kubebuilder:rbac:groups=autoscaling.flotilla.io,resources=federatedhpas,verbs=get;patch
// +kubebuilder:rbac:groups=*,resources=*,verbs=get;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
type CronFederatedHPAController struct {
	Client client.Client
	// Reader reads targets from the API server: a template of any kind must not start a watch.
	Reader   client.Reader
	Mapper   meta.RESTMapper
	Recorder events.EventRecorder
	Now      func() time.Time
}

// SetupCronFederatedHPA registers the CronFederatedHPA controller.
func SetupCronFederatedHPA(mgr ctrl.Manager) error {
	r := &CronFederatedHPAController{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Mapper: mgr.GetRESTMapper(),
		Recorder: mgr.GetEventRecorder("flotilla-cronfederatedhpa"), Now: time.Now}
	// Status writes do not call for another pass: each CronFederatedHPA comes back at its next time.
	return ctrl.NewControllerManagedBy(mgr).Named("cronfederatedhpa").
		For(&autoscalingv1alpha1.CronFederatedHPA{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).Complete(r)
}

// Reconcile runs each rule that is due, records the runs and each rule's next time, and comes back at the
// earliest next time. A run that cannot set its values is recorded as failed, not retried: the next time
// comes by the schedule.
func (r *CronFederatedHPAController) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	cron := &autoscalingv1alpha1.CronFederatedHPA{}
	if err := r.Client.Get(ctx, req.NamespacedName, cron); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if cron.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	now := r.Now()
	before := cron.DeepCopy()
	histories := map[string]autoscalingv1alpha1.ExecutionHistory{}
	for _, h := range cron.Status.ExecutionHistories {
		histories[h.RuleName] = h
	}
	status := autoscalingv1alpha1.CronFederatedHPAStatus{}
	var wake time.Time
	for _, rule := range cron.Spec.Rules {
		h := histories[rule.Name]
		h.RuleName = rule.Name
		if rule.Suspend != nil && *rule.Suspend {
			h.NextExecutionTime = nil
			status.ExecutionHistories = append(status.ExecutionHistories, h)
			continue
		}
		schedule, err := ParseSchedule(rule.Schedule, rule.TimeZone)
		if err != nil {
			// Admission refuses such a rule; one written before that rule existed is reported, not run.
			r.Recorder.Eventf(cron, nil, corev1.EventTypeWarning, ReasonBadRule, "Schedule", "rule %s: %v", rule.Name, err)
			h.NextExecutionTime = nil
			status.ExecutionHistories = append(status.ExecutionHistories, h)
			continue
		}
		due, next := schedule.Due(h.NextExecutionTime, now)
		if !due.IsZero() {
			r.run(ctx, cron, rule, &h, due, now)
		}
		h.NextExecutionTime = &metav1.Time{Time: next}
		if wake.IsZero() || next.Before(wake) {
			wake = next
		}
		status.ExecutionHistories = append(status.ExecutionHistories, h)
	}
	if !equality.Semantic.DeepEqual(cron.Status, status) {
		cron.Status = status
		if err := r.Client.Status().Patch(ctx, cron, client.MergeFrom(before), client.FieldOwner(cronFieldManager)); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	}
	if wake.IsZero() {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{RequeueAfter: max(wake.Sub(r.Now()), time.Second)}, nil
}

// run applies one rule scheduled for due and records the outcome in h.
func (r *CronFederatedHPAController) run(ctx context.Context, cron *autoscalingv1alpha1.CronFederatedHPA, rule autoscalingv1alpha1.CronFederatedHPARule, h *autoscalingv1alpha1.ExecutionHistory, due, now time.Time) {
	scheduled, at := &metav1.Time{Time: due}, &metav1.Time{Time: now}
	applied, err := r.apply(ctx, cron, rule)
	if err != nil {
		r.Recorder.Eventf(cron, nil, corev1.EventTypeWarning, ReasonScaleFailed, "Scale", "rule %s: %v", rule.Name, err)
		Remember(h, rule, nil, &autoscalingv1alpha1.FailedExecution{ScheduleTime: scheduled, ExecutionTime: at, Message: err.Error()})
		return
	}
	applied.ScheduleTime, applied.ExecutionTime = scheduled, at
	r.Recorder.Eventf(cron, nil, corev1.EventTypeNormal, ReasonScaled, "Scale", "rule %s: %s", rule.Name, describe(applied))
	Remember(h, rule, applied, nil)
}

// describe says in words what a run set.
func describe(e *autoscalingv1alpha1.SuccessfulExecution) string {
	switch {
	case e.AppliedReplicas != nil:
		return fmt.Sprintf("replicas set to %d", *e.AppliedReplicas)
	case e.AppliedMinReplicas != nil && e.AppliedMaxReplicas != nil:
		return fmt.Sprintf("minReplicas set to %d, maxReplicas to %d", *e.AppliedMinReplicas, *e.AppliedMaxReplicas)
	case e.AppliedMinReplicas != nil:
		return fmt.Sprintf("minReplicas set to %d", *e.AppliedMinReplicas)
	default:
		return fmt.Sprintf("maxReplicas set to %d", *e.AppliedMaxReplicas)
	}
}

// IsFederatedHPA says whether a scaleTargetRef names a FederatedHPA: Flotilla's, or Karmada's, whose objects
// the hub mirrors onto Flotilla's.
func IsFederatedHPA(apiVersion, kind string) bool {
	gv, err := schema.ParseGroupVersion(apiVersion)
	return err == nil && (gv.Group == autoscalingv1alpha1.GroupVersion.Group || gv.Group == autoscalingv1alpha1.KarmadaGroup) && kind == "FederatedHPA"
}

// apply sets what a rule sets on the target: a FederatedHPA's minReplicas and maxReplicas (the ones the rule
// leaves out stay), or a template's spec.replicas.
func (r *CronFederatedHPAController) apply(ctx context.Context, cron *autoscalingv1alpha1.CronFederatedHPA, rule autoscalingv1alpha1.CronFederatedHPARule) (*autoscalingv1alpha1.SuccessfulExecution, error) {
	ref := cron.Spec.ScaleTargetRef
	if IsFederatedHPA(ref.APIVersion, ref.Kind) {
		return r.applyBounds(ctx, cron.Namespace, ref, rule)
	}
	if rule.TargetReplicas == nil {
		return nil, fmt.Errorf("a %s target takes targetReplicas", ref.Kind)
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, fmt.Errorf("scaleTargetRef.apiVersion: %w", err)
	}
	gvk := gv.WithKind(ref.Kind)
	if _, err := r.Mapper.RESTMapping(gvk.GroupKind(), gv.Version); err != nil {
		return nil, fmt.Errorf("scaleTargetRef: %w", err)
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	obj.SetNamespace(cron.Namespace)
	obj.SetName(ref.Name)
	if err := r.Reader.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return nil, err
	}
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"replicas": *rule.TargetReplicas}})
	if err := r.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(cronFieldManager)); err != nil {
		return nil, err
	}
	return &autoscalingv1alpha1.SuccessfulExecution{AppliedReplicas: rule.TargetReplicas}, nil
}

// applyBounds sets a FederatedHPA's bounds, refusing a pair that would put minReplicas above maxReplicas.
// A Karmada FederatedHPA is changed itself, not its Flotilla twin, which follows it.
func (r *CronFederatedHPAController) applyBounds(ctx context.Context, namespace string, ref autoscalingv2.CrossVersionObjectReference, rule autoscalingv1alpha1.CronFederatedHPARule) (*autoscalingv1alpha1.SuccessfulExecution, error) {
	if rule.TargetMinReplicas == nil && rule.TargetMaxReplicas == nil {
		return nil, errors.New("a FederatedHPA target takes targetMinReplicas or targetMaxReplicas")
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, fmt.Errorf("scaleTargetRef.apiVersion: %w", err)
	}
	fhpa := &unstructured.Unstructured{}
	fhpa.SetGroupVersionKind(gv.WithKind(ref.Kind))
	if err := r.Reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, fhpa); err != nil {
		return nil, err
	}
	before := fhpa.DeepCopy()
	bound := func(field string, set *int32) (int64, error) {
		if set != nil {
			return int64(*set), unstructured.SetNestedField(fhpa.Object, int64(*set), "spec", field)
		}
		v, found, err := unstructured.NestedInt64(fhpa.Object, "spec", field)
		if !found && field == "minReplicas" {
			v = 1 // the API's default
		}
		return v, err
	}
	min, err := bound("minReplicas", rule.TargetMinReplicas)
	if err != nil {
		return nil, err
	}
	max, err := bound("maxReplicas", rule.TargetMaxReplicas)
	if err != nil {
		return nil, err
	}
	if min > max {
		return nil, fmt.Errorf("FederatedHPA %s would have minReplicas %d above maxReplicas %d", ref.Name, min, max)
	}
	if err := r.Client.Patch(ctx, fhpa, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), client.FieldOwner(cronFieldManager)); err != nil {
		return nil, err
	}
	return &autoscalingv1alpha1.SuccessfulExecution{AppliedMinReplicas: rule.TargetMinReplicas, AppliedMaxReplicas: rule.TargetMaxReplicas}, nil
}
