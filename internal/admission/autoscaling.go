package admission

import (
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	autoscalingv1alpha1 "github.com/flotilla-io/flotilla/api/autoscaling/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/autoscaling"
)

// autoscalingCheck checks FederatedHPAs and CronFederatedHPAs beyond their schema: bounds in order, a target
// that names a kind, metrics FederatedHPA can read, behaviors within the HorizontalPodAutoscaler's limits,
// schedules that parse in time zones that exist, and rules that set what their target takes.
var autoscalingCheck = Check{
	Name: "FlotillaAutoscaling",
	Resources: []schema.GroupResource{
		{Group: autoscalingv1alpha1.GroupVersion.Group, Resource: "federatedhpas"},
		{Group: autoscalingv1alpha1.GroupVersion.Group, Resource: "cronfederatedhpas"},
		{Group: autoscalingv1alpha1.KarmadaGroup, Resource: "federatedhpas"},
		{Group: autoscalingv1alpha1.KarmadaGroup, Resource: "cronfederatedhpas"},
	},
	Validate: validateAutoscaling,
}

func validateAutoscaling(u *unstructured.Unstructured) (field.ErrorList, error) {
	switch u.GetKind() {
	case "FederatedHPA":
		fhpa := &autoscalingv1alpha1.FederatedHPA{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, fhpa); err != nil {
			return nil, err
		}
		return validateFederatedHPA(&fhpa.Spec), nil
	case "CronFederatedHPA":
		cron := &autoscalingv1alpha1.CronFederatedHPA{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, cron); err != nil {
			return nil, err
		}
		return validateCronFederatedHPA(&cron.Spec), nil
	}
	return nil, nil
}

func validateFederatedHPA(spec *autoscalingv1alpha1.FederatedHPASpec) field.ErrorList {
	path := field.NewPath("spec")
	errs := validateTargetRef(spec.ScaleTargetRef, path.Child("scaleTargetRef"))
	if autoscaling.IsFederatedHPA(spec.ScaleTargetRef.APIVersion, spec.ScaleTargetRef.Kind) {
		errs = append(errs, field.Invalid(path.Child("scaleTargetRef", "kind"), spec.ScaleTargetRef.Kind, "a FederatedHPA scales a workload, not another FederatedHPA"))
	}
	if spec.MinReplicas != nil && *spec.MinReplicas > spec.MaxReplicas {
		errs = append(errs, field.Invalid(path.Child("minReplicas"), *spec.MinReplicas, fmt.Sprintf("must not be greater than maxReplicas (%d)", spec.MaxReplicas)))
	}
	for i, m := range spec.Metrics {
		errs = append(errs, validateMetric(m, path.Child("metrics").Index(i))...)
	}
	if b := spec.Behavior; b != nil {
		errs = append(errs, validateScalingRules(b.ScaleUp, path.Child("behavior", "scaleUp"))...)
		errs = append(errs, validateScalingRules(b.ScaleDown, path.Child("behavior", "scaleDown"))...)
	}
	return errs
}

// validateTargetRef requires an apiVersion that parses: the target's kind is found by its group.
func validateTargetRef(ref autoscalingv2.CrossVersionObjectReference, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if ref.APIVersion == "" {
		errs = append(errs, field.Required(path.Child("apiVersion"), "the target's apiVersion, such as apps/v1"))
	} else if _, err := schema.ParseGroupVersion(ref.APIVersion); err != nil {
		errs = append(errs, field.Invalid(path.Child("apiVersion"), ref.APIVersion, err.Error()))
	}
	if ref.Kind == "" {
		errs = append(errs, field.Required(path.Child("kind"), ""))
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(path.Child("name"), ""))
	}
	return errs
}

// validateMetric accepts the metrics a FederatedHPA reads from members (Resource, ContainerResource, Pods)
// with the target each takes.
func validateMetric(m autoscalingv2.MetricSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch m.Type {
	case autoscalingv2.ResourceMetricSourceType:
		if m.Resource == nil {
			return field.ErrorList{field.Required(path.Child("resource"), "a Resource metric names its resource and target")}
		}
		errs = append(errs, validateResourceTarget(m.Resource.Name, m.Resource.Target, path.Child("resource"))...)
	case autoscalingv2.ContainerResourceMetricSourceType:
		if m.ContainerResource == nil {
			return field.ErrorList{field.Required(path.Child("containerResource"), "a ContainerResource metric names its resource, container and target")}
		}
		if m.ContainerResource.Container == "" {
			errs = append(errs, field.Required(path.Child("containerResource", "container"), ""))
		}
		errs = append(errs, validateResourceTarget(m.ContainerResource.Name, m.ContainerResource.Target, path.Child("containerResource"))...)
	case autoscalingv2.PodsMetricSourceType:
		if m.Pods == nil {
			return field.ErrorList{field.Required(path.Child("pods"), "a Pods metric names its metric and target")}
		}
		if m.Pods.Metric.Name == "" {
			errs = append(errs, field.Required(path.Child("pods", "metric", "name"), ""))
		}
		if m.Pods.Metric.Selector != nil {
			errs = append(errs, metav1validation.ValidateLabelSelector(m.Pods.Metric.Selector, metav1validation.LabelSelectorValidationOptions{}, path.Child("pods", "metric", "selector"))...)
		}
		t := m.Pods.Target
		if t.Type != autoscalingv2.AverageValueMetricType || t.AverageValue == nil || t.AverageValue.Sign() <= 0 {
			errs = append(errs, field.Invalid(path.Child("pods", "target"), t.Type, "a Pods metric's target is of type AverageValue with a positive averageValue"))
		}
	case autoscalingv2.ObjectMetricSourceType, autoscalingv2.ExternalMetricSourceType:
		errs = append(errs, field.NotSupported(path.Child("type"), m.Type, []autoscalingv2.MetricSourceType{
			autoscalingv2.ResourceMetricSourceType, autoscalingv2.ContainerResourceMetricSourceType, autoscalingv2.PodsMetricSourceType}))
	default:
		errs = append(errs, field.NotSupported(path.Child("type"), m.Type, []autoscalingv2.MetricSourceType{
			autoscalingv2.ResourceMetricSourceType, autoscalingv2.ContainerResourceMetricSourceType, autoscalingv2.PodsMetricSourceType}))
	}
	return errs
}

// validateResourceTarget: a resource metric's target is a positive average utilization or average value.
func validateResourceTarget(name corev1.ResourceName, t autoscalingv2.MetricTarget, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(path.Child("name"), "the resource, such as cpu or memory"))
	}
	switch t.Type {
	case autoscalingv2.UtilizationMetricType:
		if t.AverageUtilization == nil || *t.AverageUtilization <= 0 {
			errs = append(errs, field.Invalid(path.Child("target", "averageUtilization"), t.AverageUtilization, "a Utilization target is a positive percentage of the pods' requests"))
		}
	case autoscalingv2.AverageValueMetricType:
		if t.AverageValue == nil || t.AverageValue.Sign() <= 0 {
			errs = append(errs, field.Invalid(path.Child("target", "averageValue"), t.AverageValue, "an AverageValue target is a positive quantity"))
		}
	default:
		errs = append(errs, field.NotSupported(path.Child("target", "type"), t.Type, []autoscalingv2.MetricTargetType{autoscalingv2.UtilizationMetricType, autoscalingv2.AverageValueMetricType}))
	}
	return errs
}

// validateScalingRules holds a behavior to the HorizontalPodAutoscaler's limits.
func validateScalingRules(r *autoscalingv2.HPAScalingRules, path *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	var errs field.ErrorList
	if w := r.StabilizationWindowSeconds; w != nil && (*w < 0 || *w > 3600) {
		errs = append(errs, field.Invalid(path.Child("stabilizationWindowSeconds"), *w, "must be between 0 and 3600 seconds"))
	}
	if s := r.SelectPolicy; s != nil && *s != autoscalingv2.MaxChangePolicySelect && *s != autoscalingv2.MinChangePolicySelect && *s != autoscalingv2.DisabledPolicySelect {
		errs = append(errs, field.NotSupported(path.Child("selectPolicy"), *s, []autoscalingv2.ScalingPolicySelect{autoscalingv2.MaxChangePolicySelect, autoscalingv2.MinChangePolicySelect, autoscalingv2.DisabledPolicySelect}))
	}
	if r.Policies != nil && len(r.Policies) == 0 {
		errs = append(errs, field.Required(path.Child("policies"), "at least one policy, or leave policies out for the defaults"))
	}
	for i, p := range r.Policies {
		pp := path.Child("policies").Index(i)
		if p.Type != autoscalingv2.PodsScalingPolicy && p.Type != autoscalingv2.PercentScalingPolicy {
			errs = append(errs, field.NotSupported(pp.Child("type"), p.Type, []autoscalingv2.HPAScalingPolicyType{autoscalingv2.PodsScalingPolicy, autoscalingv2.PercentScalingPolicy}))
		}
		if p.Value <= 0 {
			errs = append(errs, field.Invalid(pp.Child("value"), p.Value, "must be greater than zero"))
		}
		if p.PeriodSeconds <= 0 || p.PeriodSeconds > 1800 {
			errs = append(errs, field.Invalid(pp.Child("periodSeconds"), p.PeriodSeconds, "must be between 1 and 1800 seconds"))
		}
	}
	if r.Tolerance != nil && r.Tolerance.Sign() < 0 {
		errs = append(errs, field.Invalid(path.Child("tolerance"), r.Tolerance.String(), "must not be negative"))
	}
	return errs
}

func validateCronFederatedHPA(spec *autoscalingv1alpha1.CronFederatedHPASpec) field.ErrorList {
	path := field.NewPath("spec")
	errs := validateTargetRef(spec.ScaleTargetRef, path.Child("scaleTargetRef"))
	toFHPA := autoscaling.IsFederatedHPA(spec.ScaleTargetRef.APIVersion, spec.ScaleTargetRef.Kind)
	for i, rule := range spec.Rules {
		rp := path.Child("rules").Index(i)
		if _, err := autoscaling.ParseSchedule(rule.Schedule, rule.TimeZone); err != nil {
			at := rp.Child("schedule")
			if rule.TimeZone != nil && *rule.TimeZone != "" {
				if _, zerr := autoscaling.ParseSchedule("* * * * *", rule.TimeZone); zerr != nil {
					at = rp.Child("timeZone")
				}
			}
			errs = append(errs, field.Invalid(at, rule.Schedule, err.Error()))
		}
		if toFHPA {
			if rule.TargetReplicas != nil {
				errs = append(errs, field.Forbidden(rp.Child("targetReplicas"), "a FederatedHPA target takes targetMinReplicas and targetMaxReplicas"))
			}
			if rule.TargetMinReplicas == nil && rule.TargetMaxReplicas == nil {
				errs = append(errs, field.Required(rp.Child("targetMinReplicas"), "a FederatedHPA target takes targetMinReplicas, targetMaxReplicas or both"))
			}
			if rule.TargetMinReplicas != nil && rule.TargetMaxReplicas != nil && *rule.TargetMinReplicas > *rule.TargetMaxReplicas {
				errs = append(errs, field.Invalid(rp.Child("targetMinReplicas"), *rule.TargetMinReplicas, fmt.Sprintf("must not be greater than targetMaxReplicas (%d)", *rule.TargetMaxReplicas)))
			}
			continue
		}
		if rule.TargetReplicas == nil {
			errs = append(errs, field.Required(rp.Child("targetReplicas"), fmt.Sprintf("a %s target takes targetReplicas", spec.ScaleTargetRef.Kind)))
		}
		if rule.TargetMinReplicas != nil || rule.TargetMaxReplicas != nil {
			errs = append(errs, field.Forbidden(rp.Child("targetMinReplicas"), "targetMinReplicas and targetMaxReplicas are for a FederatedHPA target"))
		}
	}
	return errs
}
