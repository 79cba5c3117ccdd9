package addon

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	addonv1alpha1 "github.com/flotilla-io/flotilla/api/addon/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

// Finalizer on a ClusterAddOn: the hub deletes the add-on's Work and its agent's RBAC for the cluster before
// the ClusterAddOn goes.
const Finalizer = "addon.flotilla.io/cleanup"

// clusterFieldManager owns the registration and health part of ClusterAddOns' status.
var clusterFieldManager = workv1alpha1.ControllerFieldManager("clusteraddon")

// DefaultLeaseDuration is how long a Lease renewal counts when the AddOn says nothing.
const DefaultLeaseDuration = 60 * time.Second

// Reasons of the conditions the ClusterAddOn controller writes.
const (
	ReasonRegistrationApplied = "Applied"
	ReasonRegistrationFailed  = "NotApplied"
	ReasonAddOnNotFound       = "AddOnNotFound"
	ReasonHealthy             = "Healthy"
	ReasonUnhealthy           = "Unhealthy"
	ReasonLeaseExpired        = "LeaseExpired"
	ReasonDisabling           = "Disabling"
)

// +kubebuilder:rbac:groups=addon.flotilla.io,resources=clusteraddons,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=addon.flotilla.io,resources=clusteraddons/status,verbs=patch
// +kubebuilder:rbac:groups=work.flotilla.io,resources=works,verbs=get;list;watch;delete

// ClusterController runs one cluster's add-on besides its rendering: it gives the ClusterAddOn its
// finalizer and an owner reference to its AddOn (the AddOn's deletion disables it everywhere), grants the add-on's agent its hub permissions (registration.go) and reports them, judges the
// add-on's health from its Work or its Lease, and, when the ClusterAddOn is deleted, deletes the Work and the
// RBAC and waits until the Work is gone (the member objects deleted) before letting the ClusterAddOn go.
//
// A cluster being deleted is deregistration's (internal/registration): it keeps or deletes the member
// objects of every Work of the cluster as the unjoin says, and deletes the cluster's namespace, which takes
// the ClusterAddOns with it. There the finalizer deletes only the RBAC and lets go at once: deleting the
// Work itself would delete member objects an unjoin that keeps them was asked to keep, and waiting for it
// could hold the namespace until the cluster's Works are released.
type ClusterController struct {
	Client   client.Client
	Recorder events.EventRecorder
	now      func() time.Time
}

// SetupCluster registers the ClusterAddOn controller. A ClusterAddOn is looked at when it changes, when its
// AddOn's spec changes, when its Work changes and when its Lease is renewed.
func SetupCluster(mgr ctrl.Manager) error {
	r := &ClusterController{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("flotilla-addon"), now: time.Now}
	ofAddOn := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		list, err := clusterAddOns(ctx, r.Client, o.GetName())
		if err != nil {
			return nil
		}
		out := make([]reconcile.Request, len(list))
		for i := range list {
			out[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list[i])}
		}
		return out
	})
	ofWork := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: o.GetLabels()[addonv1alpha1.LabelAddOn]}}}
	})
	// A Lease in a cluster namespace may be an add-on's (named after it): the ClusterAddOn of that name, if
	// any, is looked at.
	ofLease := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		// The agent's own Lease, named after its cluster, renews often and is no add-on's.
		if cluster, ok := clusterv1alpha1.ClusterOfNamespace(o.GetNamespace()); !ok || o.GetName() == cluster {
			return nil
		}
		return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(o)}}
	})
	return ctrl.NewControllerManagedBy(mgr).Named("clusteraddon").
		For(&addonv1alpha1.ClusterAddOn{}).
		Watches(&addonv1alpha1.AddOn{}, ofAddOn, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&workv1alpha1.Work{}, ofWork, builder.WithPredicates(hasAddOnLabel)).
		Watches(&coordinationv1.Lease{}, ofLease).
		Complete(r)
}

// clusterAddOnStatus is the part of a ClusterAddOn's status the ClusterAddOn controller owns.
type clusterAddOnStatus struct {
	HealthCheck   *addonv1alpha1.HealthCheck         `json:"healthCheck,omitempty"` // nil while the AddOn is missing
	Registrations []addonv1alpha1.RegistrationStatus `json:"registrations,omitempty"`
	Conditions    []metav1.Condition                 `json:"conditions,omitempty"`
}

// Reconcile takes one cluster's add-on a step further: enabled, granted and judged, or disabled.
func (r *ClusterController) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ca := &addonv1alpha1.ClusterAddOn{}
	if err := r.Client.Get(ctx, req.NamespacedName, ca); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	cluster, ok := clusterv1alpha1.ClusterOfNamespace(ca.Namespace)
	if !ok {
		return ctrl.Result{}, nil // admission keeps ClusterAddOns in cluster namespaces
	}
	if ca.DeletionTimestamp != nil {
		return r.disable(ctx, ca, cluster)
	}
	a := &addonv1alpha1.AddOn{}
	err := r.Client.Get(ctx, client.ObjectKey{Name: ca.Name}, a)
	if client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, err
	}
	if err := r.adopt(ctx, ca, a, err == nil); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if err != nil {
		msg := fmt.Sprintf("AddOn %s does not exist", ca.Name)
		return ctrl.Result{}, r.writeStatus(ctx, ca, clusterAddOnStatus{Conditions: []metav1.Condition{
			condition(addonv1alpha1.ConditionAvailable, false, ReasonAddOnNotFound, msg, ca.Generation)}})
	}
	health := a.Spec.HealthCheck
	if health.Mode == "" {
		health.Mode = addonv1alpha1.HealthWork
	}
	want := clusterAddOnStatus{HealthCheck: &health}
	roles, bindings := grants(a, cluster)
	err = r.applyGrants(ctx, a.Name, cluster, roles, bindings)
	var missing errMissing
	switch {
	case errors.As(err, &missing):
		want.Conditions = append(want.Conditions, condition(addonv1alpha1.ConditionRegistrationApplied, false, ReasonRegistrationFailed, missing.msg, ca.Generation))
	case err != nil:
		return ctrl.Result{}, err
	case a.Spec.Registration != nil:
		want.Registrations = []addonv1alpha1.RegistrationStatus{{User: addonv1alpha1.AgentUser(a.Name, cluster),
			Groups: []string{addonv1alpha1.AgentGroup(a.Name)}, SecretName: addonv1alpha1.CredentialSecretName(a.Name)}}
		want.Conditions = append(want.Conditions, condition(addonv1alpha1.ConditionRegistrationApplied, true, ReasonRegistrationApplied,
			fmt.Sprintf("%s has the add-on's %d hub permissions", want.Registrations[0].User, len(a.Spec.Registration.HubPermissions)), ca.Generation))
	}
	available, requeue, err := r.health(ctx, a, ca)
	if err != nil {
		return ctrl.Result{}, err
	}
	want.Conditions = append(want.Conditions, available)
	return ctrl.Result{RequeueAfter: requeue}, r.writeStatus(ctx, ca, want)
}

// adopt gives a ClusterAddOn the finalizer and, when its AddOn exists, an owner reference to it, so that
// deleting the AddOn disables it everywhere (the garbage collector deletes the ClusterAddOns, whose finalizer
// removes what they installed), whoever enabled it. One patch, once.
func (r *ClusterController) adopt(ctx context.Context, ca *addonv1alpha1.ClusterAddOn, a *addonv1alpha1.AddOn, exists bool) error {
	owned := !exists || slices.ContainsFunc(ca.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == a.UID })
	if owned && controllerutil.ContainsFinalizer(ca, Finalizer) {
		return nil
	}
	patch := client.MergeFromWithOptions(ca.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.AddFinalizer(ca, Finalizer)
	if !owned {
		ca.OwnerReferences = append(ca.OwnerReferences, metav1.OwnerReference{APIVersion: addonv1alpha1.GroupVersion.String(), Kind: "AddOn",
			Name: a.Name, UID: a.UID, BlockOwnerDeletion: ptr.To(false)})
	}
	return r.Client.Patch(ctx, ca, patch)
}

// health judges the add-on on the cluster: from its Work's status, or from its Lease's last renewal (then it
// also says when that renewal stops counting).
func (r *ClusterController) health(ctx context.Context, a *addonv1alpha1.AddOn, ca *addonv1alpha1.ClusterAddOn) (metav1.Condition, time.Duration, error) {
	if a.Spec.HealthCheck.Mode == addonv1alpha1.HealthLease {
		lease := &coordinationv1.Lease{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: ca.Namespace, Name: addonv1alpha1.LeaseName(a.Name)}, lease)
		if client.IgnoreNotFound(err) != nil {
			return metav1.Condition{}, 0, err
		}
		if err != nil || lease.Spec.RenewTime == nil {
			return condition(addonv1alpha1.ConditionAvailable, false, ReasonLeaseExpired, "the add-on's agent has not renewed its Lease yet", ca.Generation), 0, nil
		}
		duration := DefaultLeaseDuration
		if d := a.Spec.HealthCheck.LeaseDuration; d != nil && d.Duration > 0 {
			duration = d.Duration
		}
		left := lease.Spec.RenewTime.Add(duration).Sub(r.now())
		if left <= 0 {
			return condition(addonv1alpha1.ConditionAvailable, false, ReasonLeaseExpired,
				fmt.Sprintf("the add-on's agent last renewed its Lease at %s, more than %s ago", lease.Spec.RenewTime.UTC().Format(time.RFC3339), duration), ca.Generation), 0, nil
		}
		return condition(addonv1alpha1.ConditionAvailable, true, ReasonHealthy, "the add-on's agent renews its Lease", ca.Generation), left + time.Second, nil
	}
	w := &workv1alpha1.Work{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: ca.Namespace, Name: addonv1alpha1.WorkName(a.Name)}, w); err != nil {
		if client.IgnoreNotFound(err) != nil {
			return metav1.Condition{}, 0, err
		}
		w = nil
	}
	healthy, why := workHealthy(w)
	reason := ReasonHealthy
	if !healthy {
		reason = ReasonUnhealthy
	}
	return condition(addonv1alpha1.ConditionAvailable, healthy, reason, why, ca.Generation), 0, nil
}

// writeStatus applies the controller's part of the status when it differs from what the ClusterAddOn says.
func (r *ClusterController) writeStatus(ctx context.Context, ca *addonv1alpha1.ClusterAddOn, want clusterAddOnStatus) error {
	conditions := slices.Clone(ca.Status.Conditions)
	for _, c := range want.Conditions {
		meta.SetStatusCondition(&conditions, c)
	}
	var health addonv1alpha1.HealthCheck
	if want.HealthCheck != nil {
		health = *want.HealthCheck
	}
	same := equality.Semantic.DeepEqual(conditions, ca.Status.Conditions) && equality.Semantic.DeepEqual(want.Registrations, ca.Status.Registrations) &&
		health.Mode == ca.Status.HealthCheck.Mode && equality.Semantic.DeepEqual(health.LeaseDuration, ca.Status.HealthCheck.LeaseDuration)
	if same {
		return nil
	}
	for i, c := range want.Conditions {
		want.Conditions[i] = *meta.FindStatusCondition(conditions, c.Type)
	}
	before := meta.FindStatusCondition(ca.Status.Conditions, addonv1alpha1.ConditionAvailable)
	if now := meta.FindStatusCondition(conditions, addonv1alpha1.ConditionAvailable); now != nil && (before == nil || before.Status != now.Status) {
		kind := corev1.EventTypeNormal
		if now.Status != metav1.ConditionTrue {
			kind = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(ca, nil, kind, now.Reason, "Health", "%s", now.Message)
	}
	return client.IgnoreNotFound(scheme.ApplyStatus(ctx, r.Client, ca, clusterFieldManager, &want))
}

// disable removes a disabled add-on from its cluster: the agent's RBAC, then the Work, and lets the
// ClusterAddOn go once the Work is gone. On a cluster being deleted it leaves the Work to deregistration.
func (r *ClusterController) disable(ctx context.Context, ca *addonv1alpha1.ClusterAddOn, cluster string) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(ca, Finalizer) {
		return ctrl.Result{}, nil
	}
	if err := r.applyGrants(ctx, ca.Name, cluster, nil, nil); err != nil {
		return ctrl.Result{}, err
	}
	c := &clusterv1alpha1.Cluster{}
	err := r.Client.Get(ctx, client.ObjectKey{Name: cluster}, c)
	if client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, err
	}
	leaving := err != nil || c.DeletionTimestamp != nil
	if !leaving {
		w := &workv1alpha1.Work{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: ca.Namespace, Name: addonv1alpha1.WorkName(ca.Name)}, w)
		if client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, err
		}
		if err == nil {
			if w.DeletionTimestamp == nil {
				if err := r.Client.Delete(ctx, w, client.Preconditions{UID: &w.UID}); client.IgnoreNotFound(err) != nil {
					return ctrl.Result{}, err
				}
				r.Recorder.Eventf(ca, nil, corev1.EventTypeNormal, ReasonDisabling, "Disable", "deleting Work %s: what the add-on installed is deleted from the cluster", w.Name)
			}
			// The Work's deletion brings this ClusterAddOn back here when it is gone.
			return ctrl.Result{RequeueAfter: 30 * time.Second}, nil
		}
	}
	patch := client.MergeFromWithOptions(ca.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(ca, Finalizer)
	return ctrl.Result{}, client.IgnoreNotFound(r.Client.Patch(ctx, ca, patch))
}
