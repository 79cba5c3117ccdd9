// Package rebalancer runs Rebalancers: each asks the scheduler, once, to place some templates afresh, by
// setting spec.rescheduleTriggeredAt on their bindings. The scheduler does the rest (scheduler.Fresh).
package rebalancer

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// Reasons of the events on a Rebalancer.
const (
	// ReasonFinished: every template has its result.
	ReasonFinished = "Finished"
	// ReasonBadSelector: the selector cannot select anything (an unknown kind, a malformed label selector).
	ReasonBadSelector = "BadSelector"
)

// fieldManager owns spec.rescheduleTriggeredAt of bindings and the status of Rebalancers.
var fieldManager = workv1alpha1.ControllerFieldManager("rebalancer")

// Controller runs Rebalancers.
//
// +kubebuilder:rbac:groups=work.flotilla.io,resources=rebalancers,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=work.flotilla.io,resources=rebalancers/status,verbs=patch
// +kubebuilder:rbac:groups=work.flotilla.io,resources=resourcebindings;clusterresourcebindings,verbs=get;patch
// +kubebuilder:rbac:groups=*,resources=*,verbs=list
type Controller struct {
	Client client.Client
	// Reader reads bindings and lists templates from the API server, not a cache: a binding the cache has
	// not seen yet must not be reported NotFound, and a selector must not start a watch of its kind.
	Reader   client.Reader
	Mapper   meta.RESTMapper
	Recorder events.EventRecorder
	// Now is the clock, for the TTL.
	Now func() time.Time
}

// Setup registers the rebalancer controller.
func Setup(mgr ctrl.Manager) error {
	r := &Controller{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Mapper: mgr.GetRESTMapper(),
		Recorder: mgr.GetEventRecorder("flotilla-rebalancer"), Now: time.Now}
	return ctrl.NewControllerManagedBy(mgr).Named("rebalancer").For(&workv1alpha1.Rebalancer{}).Complete(r)
}

// Reconcile triggers a fresh scheduling pass for each template of a Rebalancer and records the results; once
// every template has one, the Rebalancer is finished and is deleted ttlSecondsAfterFinished later. Setting
// the trigger again is harmless (it is the Rebalancer's creation time), so a pass interrupted at any line
// is simply done again.
func (r *Controller) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	rb := &workv1alpha1.Rebalancer{}
	if err := r.Client.Get(ctx, req.NamespacedName, rb); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if rb.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	if rb.Status.FinishTime != nil {
		return r.expire(ctx, rb)
	}

	status := workv1alpha1.RebalancerStatus{}
	defer func() {
		if reterr == nil {
			status.FinishTime = &metav1.Time{Time: r.Now()}
		}
		if err := r.writeStatus(ctx, rb, status); err != nil {
			reterr = errors.Join(reterr, err)
		}
	}()

	workloads, err := r.workloads(ctx, rb)
	if err != nil {
		return ctrl.Result{}, err
	}
	var errs []error
	for _, w := range workloads {
		observed, err := r.trigger(ctx, rb, w)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", w.Kind, key(w.Namespace, w.Name), err))
			continue
		}
		status.ObservedWorkloads = append(status.ObservedWorkloads, observed)
	}
	if err := errors.Join(errs...); err != nil {
		return ctrl.Result{}, err
	}
	r.Recorder.Eventf(rb, nil, corev1.EventTypeNormal, ReasonFinished, "Rebalance", "%s", summary(status.ObservedWorkloads))
	return ctrl.Result{RequeueAfter: ttl(rb)}, nil
}

// writeStatus records what this pass learned, under the controller's field manager, when it differs from
// what the Rebalancer says: results are kept even when the pass stopped on an error.
func (r *Controller) writeStatus(ctx context.Context, rb *workv1alpha1.Rebalancer, status workv1alpha1.RebalancerStatus) error {
	if status.FinishTime == nil && equality.Semantic.DeepEqual(rb.Status.ObservedWorkloads, status.ObservedWorkloads) {
		return nil
	}
	before := rb.DeepCopy()
	rb.Status = status
	return r.Client.Status().Patch(ctx, rb, client.MergeFrom(before), client.FieldOwner(fieldManager))
}

// expire deletes a finished Rebalancer once its TTL has passed, and otherwise waits for it. The delete is
// conditional on the object read, so a Rebalancer created again under the same name is not removed.
func (r *Controller) expire(ctx context.Context, rb *workv1alpha1.Rebalancer) (ctrl.Result, error) {
	if left := rb.Status.FinishTime.Add(ttl(rb)).Sub(r.Now()); left > 0 {
		return ctrl.Result{RequeueAfter: left}, nil
	}
	err := r.Client.Delete(ctx, rb, client.Preconditions{UID: &rb.UID, ResourceVersion: &rb.ResourceVersion})
	return ctrl.Result{}, client.IgnoreNotFound(err)
}

// ttl is how long a finished Rebalancer stays.
func ttl(rb *workv1alpha1.Rebalancer) time.Duration {
	if rb.Spec.TTLSecondsAfterFinished == nil {
		return 0
	}
	return time.Duration(*rb.Spec.TTLSecondsAfterFinished) * time.Second
}

// summary counts the results, for the Finished event.
func summary(observed []workv1alpha1.ObservedWorkload) string {
	counts := map[workv1alpha1.RebalanceResult]int{}
	for _, o := range observed {
		counts[o.Result]++
	}
	return fmt.Sprintf("%d templates: %d rescheduled, %d not found, %d failed", len(observed),
		counts[workv1alpha1.RebalanceSuccessful], counts[workv1alpha1.RebalanceNotFound], counts[workv1alpha1.RebalanceFailed])
}
