package autoscaling

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	autoscalingv1alpha1 "github.com/flotilla-io/flotilla/api/autoscaling/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/proxy"
)

// Reasons of a FederatedHPA's events, the HorizontalPodAutoscaler's.
const (
	ReasonSuccessfulRescale = "SuccessfulRescale"
	ReasonFailedRescale     = "FailedRescale"
	ReasonFailedGetScale    = "FailedGetScale"
	ReasonFailedMetrics     = "FailedComputeMetricsReplicas"
)

// SyncPeriod is how often a FederatedHPA is computed again, kube-controller-manager's
// --horizontal-pod-autoscaler-sync-period.
const SyncPeriod = 15 * time.Second

// fhpaFieldManager owns the templates' spec.replicas a FederatedHPA writes, and FederatedHPAs' status.
var fhpaFieldManager = workv1alpha1.ControllerFieldManager("federatedhpa")

// FederatedHPAController scales templates by their pods' metrics across the fleet.
//
// +kubebuilder:rbac:groups=autoscaling.flotilla.io,resources=federatedhpas,verbs=get;list;watch
// +kubebuilder:rbac:groups=autoscaling.flotilla.io,resources=federatedhpas/status,verbs=patch
// +kubebuilder:rbac:groups=work.flotilla.io,resources=resourcebindings,verbs=get
// +kubebuilder:rbac:groups=cluster.flotilla.io,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=*,resources=*,verbs=get;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
type FederatedHPAController struct {
	Client client.Client
	// Reader reads templates and bindings from the API server: a template of any kind must not start a watch.
	Reader   client.Reader
	Mapper   meta.RESTMapper
	Recorder events.EventRecorder
	Source   Source
	Behavior *Behavior
	// Tolerance is the usage ratio's dead band (DefaultTolerance), unless a behavior sets its own.
	Tolerance float64
	// Period is how often each FederatedHPA is computed (SyncPeriod).
	Period time.Duration
	Now    func() time.Time
}

// SetupFederatedHPA registers the FederatedHPA controller; it reaches members through backends.
func SetupFederatedHPA(mgr ctrl.Manager, backends proxy.Backends) error {
	r := &FederatedHPAController{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Mapper: mgr.GetRESTMapper(),
		Recorder: mgr.GetEventRecorder("flotilla-federatedhpa"), Source: Members{Backends: backends},
		Behavior: NewBehavior(), Tolerance: DefaultTolerance, Period: SyncPeriod, Now: time.Now}
	// Status writes do not call for another pass: each FederatedHPA comes back every Period, as upstream's.
	return ctrl.NewControllerManagedBy(mgr).Named("federatedhpa").
		For(&autoscalingv1alpha1.FederatedHPA{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).Complete(r)
}

// target is the template a FederatedHPA scales, as read.
type target struct {
	obj      *unstructured.Unstructured
	gk       schema.GroupKind
	replicas int32
	selector labels.Selector
}

// Reconcile computes a FederatedHPA once, as upstream's reconcileAutoscaler, and comes back every Period.
// The status is written at the end of every pass, whatever happened.
func (r *FederatedHPAController) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	fhpa := &autoscalingv1alpha1.FederatedHPA{}
	if err := r.Client.Get(ctx, req.NamespacedName, fhpa); err != nil {
		if apierrors.IsNotFound(err) {
			r.Behavior.Forget(req.String())
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if fhpa.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	status := fhpa.Status.DeepCopy()
	defer func() {
		if err := r.writeStatus(ctx, fhpa, status); err != nil {
			reterr = errors.Join(reterr, err)
		}
	}()
	now := r.Now()

	t, err := r.readTarget(ctx, fhpa)
	if err != nil {
		r.Recorder.Eventf(fhpa, nil, corev1.EventTypeWarning, ReasonFailedGetScale, "Scale", "%v", err)
		setCondition(status, autoscalingv2.AbleToScale, corev1.ConditionFalse, ReasonFailedGetScale, "the FederatedHPA controller was unable to get the target's current scale: %v", err)
		return ctrl.Result{RequeueAfter: r.Period}, nil
	}
	setCondition(status, autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededGetScale", "the FederatedHPA controller was able to get the target's current scale")

	desired, reason, statuses, err := r.decide(ctx, fhpa, status, t, now)
	if err != nil {
		status.CurrentReplicas, status.CurrentMetrics = t.replicas, statuses
		r.Recorder.Eventf(fhpa, nil, corev1.EventTypeWarning, ReasonFailedMetrics, "Scale", "%v", err)
		return ctrl.Result{RequeueAfter: r.Period}, nil
	}
	rescale := desired != t.replicas
	if rescale {
		if err := r.scale(ctx, t, desired); err != nil {
			r.Recorder.Eventf(fhpa, nil, corev1.EventTypeWarning, ReasonFailedRescale, "Scale", "New size: %d; reason: %s; error: %v", desired, reason, err)
			setCondition(status, autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedUpdateScale", "the FederatedHPA controller was unable to update the target scale: %v", err)
			status.CurrentReplicas, status.CurrentMetrics = t.replicas, statuses
			return ctrl.Result{}, err
		}
		setCondition(status, autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededRescale", "the FederatedHPA controller was able to update the target scale to %d", desired)
		r.Recorder.Eventf(fhpa, nil, corev1.EventTypeNormal, ReasonSuccessfulRescale, "Scale", "New size: %d; reason: %s", desired, reason)
		r.Behavior.Record(req.String(), fhpa.Spec.Behavior, t.replicas, desired, now)
		status.LastScaleTime = &metav1.Time{Time: now}
	}
	status.CurrentReplicas, status.DesiredReplicas, status.CurrentMetrics = t.replicas, desired, statuses
	status.ObservedGeneration = &fhpa.Generation
	return ctrl.Result{RequeueAfter: r.Period}, nil
}

// decide is the replica count a FederatedHPA wants now, and why: upstream's bounds first (a target above
// maxReplicas or below minReplicas is brought back without reading metrics), else the highest count any
// metric asks for, stabilized and bounded by the behavior.
func (r *FederatedHPAController) decide(ctx context.Context, fhpa *autoscalingv1alpha1.FederatedHPA, status *autoscalingv2.HorizontalPodAutoscalerStatus, t *target, now time.Time) (int32, string, []autoscalingv2.MetricStatus, error) {
	minReplicas := int32(1)
	if fhpa.Spec.MinReplicas != nil {
		minReplicas = *fhpa.Spec.MinReplicas
	}
	switch {
	case t.replicas == 0:
		setCondition(status, autoscalingv2.ScalingActive, corev1.ConditionFalse, "ScalingDisabled", "scaling is disabled since the replica count of the target is zero")
		return 0, "", nil, nil
	case t.replicas > fhpa.Spec.MaxReplicas:
		return fhpa.Spec.MaxReplicas, "Current number of replicas above Spec.MaxReplicas", nil, nil
	case t.replicas < minReplicas:
		return minReplicas, "Current number of replicas below Spec.MinReplicas", nil, nil
	}
	proposed, metric, statuses, err := r.fromMetrics(ctx, fhpa, status, t, now)
	if err != nil {
		return 0, "", statuses, err
	}
	reason := ""
	switch {
	case proposed > t.replicas:
		reason = metric + " above target"
	case proposed < t.replicas:
		reason = "All metrics below target"
	}
	desired, limit := r.Behavior.Normalize(types.NamespacedName{Namespace: fhpa.Namespace, Name: fhpa.Name}.String(), fhpa.Spec.Behavior, minReplicas, fhpa.Spec.MaxReplicas, t.replicas, proposed, now)
	setCondition(status, autoscalingv2.AbleToScale, corev1.ConditionTrue, limit.Stabilized, "%s", limit.StabilizedMessage)
	limited := corev1.ConditionFalse
	if limit.Limited {
		limited = corev1.ConditionTrue
	}
	setCondition(status, autoscalingv2.ScalingLimited, limited, limit.Reason, "%s", limit.Message)
	return desired, reason, statuses, nil
}

// fromMetrics is upstream's computeReplicasForMetrics over the fleet: the highest count of the metrics that
// could be computed; an error when none could, or when some could not and the others would scale down.
func (r *FederatedHPAController) fromMetrics(ctx context.Context, fhpa *autoscalingv1alpha1.FederatedHPA, status *autoscalingv2.HorizontalPodAutoscalerStatus, t *target, now time.Time) (int32, string, []autoscalingv2.MetricStatus, error) {
	reader, err := r.fleet(ctx, fhpa, t)
	if err != nil {
		setCondition(status, autoscalingv2.ScalingActive, corev1.ConditionFalse, "FailedGetPods", "the FederatedHPA controller was unable to read the target's pods: %v", err)
		return 0, "", nil, err
	}
	f, err := reader.pods(ctx, now)
	if err != nil {
		setCondition(status, autoscalingv2.ScalingActive, corev1.ConditionFalse, "FailedGetPods", "the FederatedHPA controller was unable to read the target's pods: %v", err)
		return 0, "", nil, err
	}
	specs := fhpa.Spec.Metrics
	if len(specs) == 0 {
		specs = defaultMetrics
	}
	tol := r.tolerances(fhpa.Spec.Behavior)
	statuses := make([]autoscalingv2.MetricStatus, len(specs))
	var replicas int32
	var metric string
	var failed int
	var first proposal
	for i, spec := range specs {
		p := reader.propose(ctx, f, t.replicas, spec, tol)
		if p.err != nil {
			if failed == 0 {
				first = p
			}
			failed++
			continue
		}
		statuses[i] = p.status
		if replicas == 0 || p.replicas > replicas {
			replicas, metric = p.replicas, p.name
		}
	}
	if failed >= len(specs) || (failed > 0 && replicas < t.replicas) {
		setCondition(status, autoscalingv2.ScalingActive, corev1.ConditionFalse, first.reason, "the FederatedHPA controller was unable to compute the replica count: %v", first.err)
		return 0, "", statuses, fmt.Errorf("invalid metrics (%d invalid out of %d), first error is: %w", failed, len(specs), first.err)
	}
	setCondition(status, autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound", "the FederatedHPA controller was able to successfully calculate a replica count from %s", metric)
	return replicas, metric, statuses, nil
}

// tolerances are the controller's, or the behavior's own where it sets one.
func (r *FederatedHPAController) tolerances(b *autoscalingv2.HorizontalPodAutoscalerBehavior) Tolerances {
	tol := Tolerances{Down: r.Tolerance, Up: r.Tolerance}
	if b != nil && b.ScaleDown != nil && b.ScaleDown.Tolerance != nil {
		tol.Down = b.ScaleDown.Tolerance.AsApproximateFloat64()
	}
	if b != nil && b.ScaleUp != nil && b.ScaleUp.Tolerance != nil {
		tol.Up = b.ScaleUp.Tolerance.AsApproximateFloat64()
	}
	return tol
}

// fleet is the reader of the members the template's binding places it in.
func (r *FederatedHPAController) fleet(ctx context.Context, fhpa *autoscalingv1alpha1.FederatedHPA, t *target) (fleetReader, error) {
	rb := &workv1alpha1.ResourceBinding{}
	key := client.ObjectKey{Namespace: fhpa.Namespace, Name: workv1alpha1.BindingName(t.gk, t.obj.GetName())}
	if err := r.Reader.Get(ctx, key, rb); err != nil {
		if apierrors.IsNotFound(err) {
			return fleetReader{}, fmt.Errorf("%s %s is not placed: no policy selects it", t.gk.Kind, t.obj.GetName())
		}
		return fleetReader{}, err
	}
	if len(rb.Spec.Clusters) == 0 {
		return fleetReader{}, fmt.Errorf("%s %s is placed in no cluster yet", t.gk.Kind, t.obj.GetName())
	}
	if p := rb.Spec.Placement; len(rb.Spec.Clusters) > 1 && (p == nil || p.ReplicaScheduling == nil ||
		p.ReplicaScheduling.ReplicaSchedulingType != policyv1alpha1.ReplicaSchedulingDivided) {
		// Each cluster runs all the replicas: a fleet-wide count would multiply them by the clusters.
		return fleetReader{}, fmt.Errorf("%s %s is duplicated on %d clusters: a FederatedHPA scales templates whose placement divides the replicas (replicaScheduling Divided)",
			t.gk.Kind, t.obj.GetName(), len(rb.Spec.Clusters))
	}
	reader := fleetReader{source: r.Source, namespace: fhpa.Namespace, selector: t.selector}
	for _, tc := range rb.Spec.Clusters {
		c := &clusterv1alpha1.Cluster{}
		if err := r.Client.Get(ctx, client.ObjectKey{Name: tc.Name}, c); err != nil {
			return fleetReader{}, fmt.Errorf("cluster %s: %w", tc.Name, err)
		}
		reader.clusters = append(reader.clusters, c)
	}
	return reader, nil
}

// readTarget reads the template and its replicas and pod selector.
func (r *FederatedHPAController) readTarget(ctx context.Context, fhpa *autoscalingv1alpha1.FederatedHPA) (*target, error) {
	ref := fhpa.Spec.ScaleTargetRef
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
	if err := r.Reader.Get(ctx, client.ObjectKey{Namespace: fhpa.Namespace, Name: ref.Name}, obj); err != nil {
		return nil, err
	}
	replicas, found, err := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	if err != nil {
		return nil, fmt.Errorf("%s %s: spec.replicas: %w", ref.Kind, ref.Name, err)
	}
	if !found {
		replicas = 1
	}
	raw, found, err := unstructured.NestedMap(obj.Object, "spec", "selector")
	if err != nil || !found {
		return nil, fmt.Errorf("%s %s has no spec.selector to find its pods by", ref.Kind, ref.Name)
	}
	ls := &metav1.LabelSelector{}
	data, _ := json.Marshal(raw)
	if err := json.Unmarshal(data, ls); err != nil {
		return nil, fmt.Errorf("%s %s: spec.selector: %w", ref.Kind, ref.Name, err)
	}
	selector, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil || selector.Empty() {
		return nil, fmt.Errorf("%s %s: spec.selector selects no pods in particular", ref.Kind, ref.Name)
	}
	return &target{obj: obj, gk: gvk.GroupKind(), replicas: int32(replicas), selector: selector}, nil
}

// scale writes the template's spec.replicas, conditional on the version read, so a concurrent change is not
// overwritten (the next pass computes again).
func (r *FederatedHPAController) scale(ctx context.Context, t *target, replicas int32) error {
	patch, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": t.obj.GetResourceVersion()},
		"spec":     map[string]any{"replicas": replicas},
	})
	return r.Client.Patch(ctx, t.obj, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(fhpaFieldManager))
}

func (r *FederatedHPAController) writeStatus(ctx context.Context, fhpa *autoscalingv1alpha1.FederatedHPA, status *autoscalingv2.HorizontalPodAutoscalerStatus) error {
	if equality.Semantic.DeepEqual(&fhpa.Status, status) {
		return nil
	}
	before := fhpa.DeepCopy()
	fhpa.Status = *status
	return client.IgnoreNotFound(r.Client.Status().Patch(ctx, fhpa, client.MergeFrom(before), client.FieldOwner(fhpaFieldManager)))
}

// setCondition sets a condition of an autoscaler's status; its transition time changes only with its status.
func setCondition(status *autoscalingv2.HorizontalPodAutoscalerStatus, kind autoscalingv2.HorizontalPodAutoscalerConditionType, value corev1.ConditionStatus, reason, format string, args ...any) {
	c := autoscalingv2.HorizontalPodAutoscalerCondition{Type: kind, Status: value, Reason: reason, Message: fmt.Sprintf(format, args...), LastTransitionTime: metav1.Now()}
	for i := range status.Conditions {
		if status.Conditions[i].Type == kind {
			if status.Conditions[i].Status == value {
				c.LastTransitionTime = status.Conditions[i].LastTransitionTime
			}
			status.Conditions[i] = c
			return
		}
	}
	status.Conditions = append(status.Conditions, c)
}
