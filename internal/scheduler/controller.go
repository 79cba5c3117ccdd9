package scheduler

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"k8s.io/utils/ptr"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// Reasons of the Scheduled condition, and of the events the scheduler records with it.
const (
	ReasonScheduled    = "Scheduled"
	ReasonNoClusterFit = "NoClusterFit"
	// ReasonEmptyPlacement: the scheduler chose no cluster at all; the current placement stays.
	ReasonEmptyPlacement = "EmptyPlacement"
	// ReasonPlacementFallback (events only): placed, but not quite as the policy asked (Result.Note says how).
	ReasonPlacementFallback = "PlacementFallback"
)

// maxEventNote is the longest note the API server accepts in an event; a NoClusterFit message over a large
// fleet can be longer.
const maxEventNote = 1024

// binding is a ResourceBinding or ClusterResourceBinding pointer.
type binding interface {
	client.Object
	workv1alpha1.Object
}

// Controller writes each binding's placement (spec.clusters) and its Scheduled condition.
type Controller[T binding] struct {
	Client    client.Client
	Recorder  events.EventRecorder
	Framework *Framework
	New       func() T
}

// Setup registers the scheduler for both binding kinds. Any change of a cluster (joined, left, labels,
// taints, served APIs) reschedules every binding.
func Setup(mgr ctrl.Manager) error {
	f, recorder := Default(), mgr.GetEventRecorder("flotilla-scheduler")
	if err := setup(mgr, "scheduler", &Controller[*workv1alpha1.ResourceBinding]{Client: mgr.GetClient(), Recorder: recorder, Framework: f,
		New: func() *workv1alpha1.ResourceBinding { return &workv1alpha1.ResourceBinding{} }}, &workv1alpha1.ResourceBindingList{}); err != nil {
		return err
	}
	return setup(mgr, "cluster-scheduler", &Controller[*workv1alpha1.ClusterResourceBinding]{Client: mgr.GetClient(), Recorder: recorder, Framework: f,
		New: func() *workv1alpha1.ClusterResourceBinding { return &workv1alpha1.ClusterResourceBinding{} }}, &workv1alpha1.ClusterResourceBindingList{})
}

func setup[T binding](mgr ctrl.Manager, name string, r *Controller[T], list client.ObjectList) error {
	allBindings := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		if err := mgr.GetClient().List(ctx, list); err != nil {
			return nil
		}
		items, _ := meta.ExtractList(list)
		out := make([]reconcile.Request, 0, len(items))
		for _, o := range items {
			if obj, ok := o.(client.Object); ok {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
			}
		}
		return out
	})
	return ctrl.NewControllerManagedBy(mgr).Named(name).For(r.New()).
		Watches(&clusterv1alpha1.Cluster{}, allBindings).
		Complete(r)
}

// Reconcile schedules one binding. When nothing fits, or the result would place the binding nowhere, the
// current placement stays and Scheduled=False says why: a label, health or discovery change never removes a
// workload from every cluster at once.
func (r *Controller[T]) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	b := r.New()
	if err := r.Client.Get(ctx, req.NamespacedName, b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if b.GetDeletionTimestamp() != nil {
		return ctrl.Result{}, nil
	}
	clusters := &clusterv1alpha1.ClusterList{}
	if err := r.Client.List(ctx, clusters); err != nil {
		return ctrl.Result{}, err
	}
	spec, status := b.BindingSpec(), b.BindingStatus()
	result, err := r.Framework.Schedule(spec, clusters.Items, status.SchedulerObservedAffinityName)
	cond, placed := decide(spec.Clusters, result, err)
	cond.ObservedGeneration = b.GetGeneration()
	if placed && !equality.Semantic.DeepEqual(spec.Clusters, result.Clusters) {
		addEvictionTasks(spec, result.Clusters, result.Evicted)
		spec.Clusters = result.Clusters
		if err := r.Client.Update(ctx, b); err != nil {
			return ctrl.Result{}, err
		}
	}
	changed := meta.SetStatusCondition(&status.Conditions, cond)
	if changed && (!placed || result.Note != "") {
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
	if placed && status.SchedulerObservedAffinityName != result.AffinityName {
		status.SchedulerObservedAffinityName = result.AffinityName
		changed = true
	}
	if placed && status.SchedulerObservedGeneration != b.GetGeneration() {
		status.SchedulerObservedGeneration = b.GetGeneration()
		now := metav1.Now()
		status.LastScheduledTime = &now
		changed = true
	}
	if changed {
		if err := r.Client.Status().Update(ctx, b); err != nil {
			return ctrl.Result{}, err
		}
	}
	if next, ok := NextNoExecuteExpiry(spec, clusters.Items, time.Now()); ok {
		return ctrl.Result{RequeueAfter: next + time.Second}, nil
	}
	return ctrl.Result{}, nil
}

// decide turns a scheduling outcome into the Scheduled condition, and says whether the result becomes the
// binding's placement. An error or an empty result never does: spec.clusters is never emptied by the
// scheduler, because the binding controller would delete every member's copy.
func decide(current []workv1alpha1.TargetCluster, res Result, err error) (cond metav1.Condition, placed bool) {
	cond = metav1.Condition{Type: workv1alpha1.ConditionScheduled, Status: metav1.ConditionFalse}
	switch {
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

// DefaultEvictionGrace is how long an evicted copy waits for its replacement to become healthy.
const DefaultEvictionGrace = 600 * time.Second

// addEvictionTasks records the clusters a NoExecute taint moves the binding away from, so their copies stay
// until the new placement is healthy (or the grace period passes).
func addEvictionTasks(spec *workv1alpha1.ResourceBindingSpec, targets []workv1alpha1.TargetCluster, evicted map[string]string) {
	now := metav1.Now()
	for _, old := range spec.Clusters {
		reason, ok := evicted[old.Name]
		if !ok || slices.ContainsFunc(targets, func(t workv1alpha1.TargetCluster) bool { return t.Name == old.Name }) ||
			slices.ContainsFunc(spec.GracefulEvictionTasks, func(t workv1alpha1.GracefulEvictionTask) bool { return t.FromCluster == old.Name }) {
			continue
		}
		spec.GracefulEvictionTasks = append(spec.GracefulEvictionTasks, workv1alpha1.GracefulEvictionTask{
			FromCluster: old.Name, PurgeMode: policyv1alpha1.PurgeGracefully, Replicas: ptr.To(old.Replicas),
			Reason: "TaintUntolerated", Message: "the cluster " + reason, Producer: "scheduler",
			GracePeriodSeconds: ptr.To(int32(DefaultEvictionGrace.Seconds())), CreationTimestamp: &now,
		})
	}
}

func describe(targets []workv1alpha1.TargetCluster) string {
	parts := make([]string, len(targets))
	for i, t := range targets {
		parts[i] = fmt.Sprintf("%s (%d)", t.Name, t.Replicas)
	}
	return strings.Join(parts, ", ")
}
