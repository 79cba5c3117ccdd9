package scheduler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/clusterset"
	"github.com/flotilla-io/flotilla/internal/interpreter"
	"github.com/flotilla-io/flotilla/internal/metrics"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

// Reasons of the Scheduled condition, and of the events the scheduler records with it.
const (
	ReasonScheduled    = "Scheduled"
	ReasonNoClusterFit = "NoClusterFit"
	// ReasonEmptyPlacement: the scheduler chose no cluster at all; the current placement stays.
	ReasonEmptyPlacement = "EmptyPlacement"
	// ReasonNotDivisible: the placement divides the template over several clusters, which its kind does not
	// allow (an Indexed Job); the current placement stays.
	ReasonNotDivisible = "NotDivisible"
	// ReasonPlacementFallback (events only): placed, but not quite as the policy asked (Result.Note says how).
	ReasonPlacementFallback = "PlacementFallback"
)

// maxEventNote is the longest note the API server accepts in an event; a NoClusterFit message over a large
// fleet can be longer.
const maxEventNote = 1024

// fieldManager owns what the scheduler writes: spec.clusters, spec.gracefulEvictionTasks,
// spec.failoverRecords, the Scheduled condition, the schedulerObserved fields, status.notPlacedOn,
// status.evictions and status.taintedClusters.
var fieldManager = workv1alpha1.ControllerFieldManager("scheduler")

// Controller writes each binding's placement (spec.clusters), its eviction tasks and its Scheduled condition.
type Controller[T workv1alpha1.Binding] struct {
	Client    client.Client
	Recorder  events.EventRecorder
	Framework *Framework
	New       func() T
	// Templates reads templates (detector.Templates).
	Templates client.Reader
	// DescheduleAfter is how long replicas divided by capacity may stay unschedulable in a cluster before
	// they move, unless the policy says otherwise; 0 never moves them (deschedule.go).
	DescheduleAfter time.Duration
}

// Setup registers the scheduler for both binding kinds. A binding is placed again when its policy-derived
// spec changes, when it becomes healthy while clusters are being left, and when a cluster changes in a way
// that can move it (clusterEvents), and a namespaced binding when its namespace's grant may have changed
// (granttriggers.go) or the Placement it follows decides otherwise (placementref.go); never because of its
// own writes or a cluster's heartbeat. Bindings fail
// over from an unhealthy cluster after failoverAfter, and replicas divided by capacity leave a cluster that
// cannot schedule them after descheduleAfter, unless their policy says otherwise.
func Setup(mgr ctrl.Manager, failoverAfter, descheduleAfter time.Duration, templates client.Reader) error {
	f, recorder := New(failoverAfter), mgr.GetEventRecorder("flotilla-scheduler")
	c := mgr.GetClient()
	// Namespaced bindings are confined to their namespace's grant, so what changes a grant places them again.
	if err := setup(mgr, "scheduler", &Controller[*workv1alpha1.ResourceBinding]{Client: c, Recorder: recorder, Framework: f,
		Templates: templates, DescheduleAfter: descheduleAfter, New: func() *workv1alpha1.ResourceBinding { return &workv1alpha1.ResourceBinding{} }},
		func() client.ObjectList { return &workv1alpha1.ResourceBindingList{} },
		func(b *builder.Builder) *builder.Builder {
			return b.Watches(&clusterv1alpha1.ClusterSetBinding{}, setBindingEvents(c)).
				Watches(&clusterv1alpha1.ClusterSet{}, setEvents(c)).
				Watches(&corev1.ConfigMap{}, modeEvents(c)).
				Watches(&clusterv1alpha1.Placement{}, placementEvents(c, placementName)).
				Watches(&clusterv1alpha1.PlacementDecision{}, placementEvents(c, decisionPlacement))
		}); err != nil {
		return err
	}
	return setup(mgr, "cluster-scheduler", &Controller[*workv1alpha1.ClusterResourceBinding]{Client: c, Recorder: recorder, Framework: f,
		Templates: templates, DescheduleAfter: descheduleAfter, New: func() *workv1alpha1.ClusterResourceBinding { return &workv1alpha1.ClusterResourceBinding{} }},
		func() client.ObjectList { return &workv1alpha1.ClusterResourceBindingList{} }, nil)
}

func setup[T workv1alpha1.Binding](mgr ctrl.Manager, name string, r *Controller[T], list func() client.ObjectList, more func(*builder.Builder) *builder.Builder) error {
	// The priority queue is controller-runtime's default; it is asked for here because schedulePriority
	// relies on it (priority.go).
	b := ctrl.NewControllerManagedBy(mgr).Named(name).WithOptions(controller.Options{UsePriorityQueue: ptr.To(true)}).
		Watches(r.New(), bindingEvents, builder.WithPredicates(bindingChanged)).
		Watches(&clusterv1alpha1.Cluster{}, clusterEvents(mgr.GetClient(), list))
	if more != nil {
		b = more(b)
	}
	return b.Complete(r)
}

// Reconcile schedules one binding. When nothing fits, or the result would place the binding nowhere, the
// current placement stays and Scheduled=False says why: a label, health or discovery change never removes a
// workload from every cluster at once. The placement and eviction tasks are applied first, then the status
// (which records the generation the placement produced); each only when it changes.
func (r *Controller[T]) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	b := r.New()
	if err := r.Client.Get(ctx, req.NamespacedName, b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if b.GetDeletionTimestamp() != nil || !ours(b.BindingSpec()) {
		return ctrl.Result{}, nil
	}
	start, attempt := time.Now(), metrics.ResultError // until the pass completes
	defer func() { metrics.ObserveSchedulingAttempt(attempt, time.Since(start)) }()
	clusters := &clusterv1alpha1.ClusterList{}
	if err := r.Client.List(ctx, clusters); err != nil {
		return ctrl.Result{}, err
	}
	f, err := r.framework(ctx, b)
	if err != nil {
		return ctrl.Result{}, err // retried; the placement stays as it is
	}
	spec, status := b.BindingSpec(), b.BindingStatus()
	var decided PlacementDecisions
	if spec.PlacementRef != nil {
		if decided, err = r.placementDecisions(ctx, b); err != nil {
			return ctrl.Result{}, err // retried; the placement stays as it is
		}
		f = f.Decided(decided)
	}
	now := time.Now()
	fresh := Fresh(spec, status) // read before this pass writes anything
	// Evictions finish on what the current generation says, before a new placement starts new ones.
	tasks := finishEvictions(spec.GracefulEvictionTasks, status.Conditions, b.GetGeneration(), now)
	records, recordWait := liveRecords(spec.FailoverRecords, now)
	failed, failWait := applicationFailures(spec, status, now)
	stuck, stuckWait := stuckReplicas(spec, status, r.DescheduleAfter, now)
	failing := len(failed) > 0
	result, failed, moved, blocked, err := r.deschedule(f, spec, status, clusters.Items, records, failed, stuck, now)
	if err != nil && decided.Missing != "" {
		err = &placementError{reason: decided.Reason, error: errors.New(decided.Missing)}
	}
	if err == nil {
		refusal, readErr := r.divisible(ctx, spec, result.Clusters)
		if readErr != nil {
			return ctrl.Result{}, readErr
		}
		err = refusal
	}
	cond, placed := decide(spec.Clusters, result, err)
	decision := metrics.ResultUnschedulable
	if placed {
		decision = metrics.ResultScheduled
	}
	if blocked != "" {
		cond.Message += "; " + blocked
	}
	// Failover is not applied (the detector owns it); addEvictionTasks reads the purge modes from it.
	want := workv1alpha1.ResourceBindingSpec{Clusters: spec.Clusters, GracefulEvictionTasks: tasks, FailoverRecords: records, Failover: spec.Failover}
	var started []workv1alpha1.GracefulEvictionTask
	if placed && !equality.Semantic.DeepEqual(spec.Clusters, result.Clusters) {
		started = addEvictionTasks(&want, result.Clusters, result.Evicted, failed)
		if want.FailoverRecords, err = r.recordFailovers(ctx, b, want.FailoverRecords, result, failed, now); err != nil {
			return ctrl.Result{}, err
		}
		want.Clusters = result.Clusters
	}
	if !equality.Semantic.DeepEqual(spec.Clusters, want.Clusters) || !equality.Semantic.DeepEqual(spec.GracefulEvictionTasks, want.GracefulEvictionTasks) ||
		!equality.Semantic.DeepEqual(spec.FailoverRecords, want.FailoverRecords) {
		generation, err := r.applyPlacement(ctx, b, want)
		if err != nil {
			return ctrl.Result{}, err
		}
		r.recordEvictions(b, spec, status, want, started)
		if moved {
			r.Recorder.Eventf(templateRef(spec), nil, corev1.EventTypeNormal, ReasonDescheduled, "Deschedule", "%s", descheduledMessage(stuck, status, want.Clusters))
		}
		for _, task := range started {
			metrics.Evictions.WithLabelValues(task.Reason).Inc()
		}
		b.SetGeneration(generation)
		spec.Clusters, spec.GracefulEvictionTasks, spec.FailoverRecords = want.Clusters, want.GracefulEvictionTasks, want.FailoverRecords
	}
	if blocked != "" && failing {
		r.Recorder.Eventf(templateRef(spec), nil, corev1.EventTypeWarning, ReasonApplicationFailoverBlocked, "Evict", "%s", blocked)
	}
	cond.ObservedGeneration = b.GetGeneration()
	tainted := f.Taints.Tainted(spec, clusters.Items, now)
	if err := r.writeStatus(ctx, b, cond, placed, placed && fresh, result, tainted); err != nil {
		return ctrl.Result{}, err
	}
	wait := nextEvictionDeadline(spec.GracefulEvictionTasks, now)
	// A taint's timeAdded is stored to the second, never later than the taint came: a small margin suffices.
	if next, ok := f.Taints.NextExpiry(spec, clusters.Items, now); ok && (wait == 0 || next+100*time.Millisecond < wait) {
		wait = next + 100*time.Millisecond
	}
	for _, next := range []time.Duration{failWait, recordWait, stuckWait} {
		if next > 0 && (wait == 0 || next < wait) {
			wait = next
		}
	}
	attempt = decision
	return ctrl.Result{RequeueAfter: wait}, nil
}

// framework is the framework for one pass over binding b: confined to its namespace's grant (the hub's
// mode and the namespace's ClusterSetBindings, read from the cache) when a PropagationPolicy placed it; as is
// for a ClusterResourceBinding and for a ResourceBinding the detector labelled as placed by a
// ClusterPropagationPolicy, an admin's. An error reading the mode or the bindings is returned, never read as
// "no binding": the pass fails and is retried, and the placement stays as it is.
func (r *Controller[T]) framework(ctx context.Context, b T) (*Framework, error) {
	if b.GetNamespace() == "" || placedByAdmin(b) {
		return r.Framework, nil
	}
	mode, err := clusterset.ReadMode(ctx, r.Client)
	if err != nil {
		return nil, err
	}
	grant, err := clusterset.Lookup(ctx, r.Client, b.GetNamespace(), mode)
	if err != nil {
		return nil, err
	}
	return r.Framework.Confined(grant), nil
}

// placedByAdmin reports whether a ClusterPropagationPolicy placed the binding (the detector's label).
func placedByAdmin(b client.Object) bool {
	return b.GetLabels()[policyv1alpha1.LabelClusterPropagationPolicy] != ""
}

// ours reports whether Flotilla's scheduler places the binding: its policy names no scheduler or this one.
// A binding naming another scheduler is that scheduler's: its spec.clusters, eviction tasks and Scheduled
// condition are left alone, as Karmada leaves them for a second scheduler.
func ours(spec *workv1alpha1.ResourceBindingSpec) bool {
	return spec.SchedulerName == "" || spec.SchedulerName == policyv1alpha1.DefaultSchedulerName
}

// applyPlacement applies spec.clusters, spec.gracefulEvictionTasks and spec.failoverRecords, each whole, and
// returns the binding's new generation. All are always sent: a server-side apply that leaves out a field its manager
// owns removes it. (The scheduler used to Update the whole binding, writing the detector's fields back from
// its cache.)
func (r *Controller[T]) applyPlacement(ctx context.Context, b T, want workv1alpha1.ResourceBindingSpec) (int64, error) {
	fields, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&want)
	if err != nil {
		return 0, err
	}
	// Applied empty, so no earlier writer's tasks or records linger.
	placement := map[string]any{"gracefulEvictionTasks": []any{}, "failoverRecords": []any{}}
	for _, field := range []string{"clusters", "gracefulEvictionTasks", "failoverRecords"} {
		if v, ok := fields[field]; ok {
			placement[field] = v
		}
	}
	obj, err := scheme.ApplyObject(r.Client, b, map[string]any{"spec": placement})
	if err != nil {
		return 0, err
	}
	if err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(fieldManager), client.ForceOwnership); err != nil {
		return 0, err
	}
	return obj.GetGeneration(), nil
}

// writeStatus applies the Scheduled condition, the schedulerObserved fields, the verdicts on the clusters
// left out (notPlacedOn), what ends each eviction task (evictions) and when the binding leaves each tainted
// cluster of its placement (tainted) when they change, and records an event when the binding cannot be placed
// as asked. When the binding is not placed, the observed generation, affinity group and time of the last
// placement stay as they were.
func (r *Controller[T]) writeStatus(ctx context.Context, b T, cond metav1.Condition, placed, answered bool, result Result,
	tainted []workv1alpha1.TaintedCluster) error {
	status := b.BindingStatus()
	conditions := slices.Clone(status.Conditions)
	changed := meta.SetStatusCondition(&conditions, cond)
	observed := workv1alpha1.ResourceBindingStatus{
		SchedulerObservedGeneration:   status.SchedulerObservedGeneration,
		SchedulerObservedAffinityName: status.SchedulerObservedAffinityName,
		LastScheduledTime:             status.LastScheduledTime,
		RescheduleTriggerObserved:     status.RescheduleTriggerObserved,
		Conditions:                    []metav1.Condition{*meta.FindStatusCondition(conditions, cond.Type)},
	}
	// Why each cluster left out was, written with the rest and only when it changes.
	observed.NotPlacedOn, observed.NotPlacedOnOmitted = BoundVerdicts(result.Verdicts)
	if !equality.Semantic.DeepEqual(observed.NotPlacedOn, status.NotPlacedOn) || observed.NotPlacedOnOmitted != status.NotPlacedOnOmitted {
		changed = true
	}
	// What ends each eviction and when the binding leaves each tainted cluster, as this pass decided them:
	// what `flotilla get bindings`, `status` and `describe cluster` show.
	observed.Evictions, observed.TaintedClusters = evictionStatus(b.BindingSpec().GracefulEvictionTasks), tainted
	if !equality.Semantic.DeepEqual(observed.Evictions, status.Evictions) || !equality.Semantic.DeepEqual(observed.TaintedClusters, status.TaintedClusters) {
		changed = true
	}
	// A fresh pass that placed the binding answered its trigger, even when the placement stayed the same.
	if trigger := b.BindingSpec().RescheduleTriggeredAt; answered && !trigger.Equal(observed.RescheduleTriggerObserved) {
		observed.RescheduleTriggerObserved = trigger
		changed = true
	}
	if placed && (observed.SchedulerObservedGeneration != b.GetGeneration() || observed.SchedulerObservedAffinityName != result.AffinityName) {
		observed.SchedulerObservedGeneration, observed.SchedulerObservedAffinityName = b.GetGeneration(), result.AffinityName
		observed.LastScheduledTime = ptr.To(metav1.NewTime(time.Now()))
		changed = true
	}
	if !changed {
		return nil
	}
	// A status apply never creates: a binding deleted since it was read is simply done.
	if err := scheme.ApplyStatus(ctx, r.Client, b, fieldManager, &observed); err != nil {
		return client.IgnoreNotFound(err)
	}
	if previous := meta.FindStatusCondition(status.Conditions, cond.Type); (previous == nil || previous.Status != cond.Status ||
		previous.Reason != cond.Reason || previous.Message != cond.Message) && (!placed || result.Note != "") {
		reason := cond.Reason
		if placed {
			reason = ReasonPlacementFallback
		}
		note := cond.Message
		if len(note) > maxEventNote {
			note = note[:maxEventNote-3] + "..."
		}
		r.Recorder.Eventf(b, nil, corev1.EventTypeWarning, reason, "Schedule", "%s", note)
	}
	return nil
}

// decide turns a scheduling outcome into the Scheduled condition, and says whether the result becomes the
// binding's placement. An error or an empty result never does: spec.clusters is never emptied by the
// scheduler, because the binding controller would delete every member's copy.
func decide(current []workv1alpha1.TargetCluster, res Result, err error) (cond metav1.Condition, placed bool) {
	cond = metav1.Condition{Type: workv1alpha1.ConditionScheduled, Status: metav1.ConditionFalse}
	var notDivisible *notDivisibleError
	var noDecision *placementError
	switch {
	case errors.As(err, &notDivisible):
		cond.Reason, cond.Message = ReasonNotDivisible, err.Error()
	case errors.As(err, &noDecision):
		cond.Reason, cond.Message = noDecision.reason, err.Error()
	case err != nil:
		cond.Reason, cond.Message = ReasonNoClusterFit, err.Error()
	case len(res.Clusters) == 0:
		cond.Reason, cond.Message = ReasonEmptyPlacement, "the placement chose no cluster"
	default:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, ReasonScheduled, "placed on "+describe(res.Clusters)
		if res.AffinityName != "" {
			cond.Message += " (affinity group " + res.AffinityName + ")"
		}
		if res.Note != "" {
			cond.Message += "; " + res.Note
		}
		return cond, true
	}
	if len(current) > 0 {
		cond.Message += "; the current placement stays"
	}
	return cond, false
}

func describe(targets []workv1alpha1.TargetCluster) string {
	parts := make([]string, len(targets))
	for i, t := range targets {
		parts[i] = fmt.Sprintf("%s (%d)", t.Name, t.Replicas)
	}
	return clusterv1alpha1.ListInMessage(parts)
}

// notDivisibleError: the template's kind cannot be divided over several clusters.
type notDivisibleError struct{ error }

// divisible returns a refusal when a Divided placement would share a template over several clusters that its
// kind cannot be shared over (an Indexed Job runs every index in every cluster); readErr when the template
// cannot be read, which is retried rather than reported as a refusal.
func (r *Controller[T]) divisible(ctx context.Context, spec *workv1alpha1.ResourceBindingSpec, targets []workv1alpha1.TargetCluster) (refusal, readErr error) {
	if len(targets) < 2 || spec.Resource.Kind != "Job" || spec.Placement == nil || spec.Placement.ReplicaScheduling == nil ||
		spec.Placement.ReplicaScheduling.ReplicaSchedulingType != policyv1alpha1.ReplicaSchedulingDivided {
		return nil, nil
	}
	template := &unstructured.Unstructured{}
	template.SetAPIVersion(spec.Resource.APIVersion)
	template.SetKind(spec.Resource.Kind)
	if err := r.Templates.Get(ctx, client.ObjectKey{Namespace: spec.Resource.Namespace, Name: spec.Resource.Name}, template); err != nil {
		return nil, client.IgnoreNotFound(err) // a binding whose template is gone follows it
	}
	if err := interpreter.Divisible(template); err != nil {
		return &notDivisibleError{err}, nil
	}
	return nil, nil
}
