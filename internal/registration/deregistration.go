package registration

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

// ReasonDeletingMemberObjects is the reason of a deleted Cluster's Deleting condition while its Works were
// deleted (cluster.flotilla.io/unjoin: DeleteResources) and the member objects of some are not reported
// deleted yet: the cluster's agent, or for a Push cluster the hub, deletes them.
const ReasonDeletingMemberObjects = "DeletingMemberObjects"

// deregistrationFieldManager owns the Deleting condition of Clusters.
var deregistrationFieldManager = workv1alpha1.ControllerFieldManager("deregistration")

// +kubebuilder:rbac:groups=cluster.flotilla.io,resources=clusters,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=cluster.flotilla.io,resources=clusters/status,verbs=patch
// +kubebuilder:rbac:groups=work.flotilla.io,resources=works,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups="",namespace=flotilla-system,resources=secrets,verbs=delete
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Deregistration takes a deleted Cluster off the hub, whoever deleted it, through the steps of
// clusterv1alpha1.FinalizerDeregistration: it gives every Cluster that finalizer and, once the Cluster is
// deleted, runs the next step that is not done, from what the API server holds, so a hub that restarts
// halfway resumes where it stopped. With UnjoinDeleteResources it deletes the cluster's Works and waits until
// the executor reports the member objects of each deleted (the Deleting condition says which it waits for,
// and an event marks the wait); nothing in the member is deleted otherwise. Then it deletes a Push cluster's
// credentials and the cluster's namespace, and lets the Cluster go. The namespace goes first so that nothing
// is written for the cluster once it is let go: a binding whose scheduler has not dropped the cluster yet
// writes a deleted Work again, and the agent, still reading the namespace, would apply what it had just
// deleted. The namespace's contents (Works, Lease, agent Role) and the agent's ClusterRole go after the
// Cluster, and the work-release controller (internal/execution) frees the Works, whose execution finalizer
// no executor removes once the Cluster is gone.
type Deregistration struct {
	Client client.Client
	// Reader lists a deleted Cluster's Works from the API server, not the cache: a Work the cache has not
	// seen yet would otherwise read as "no member objects to delete" and the Cluster would go with them left.
	Reader   client.Reader
	Recorder events.EventRecorder
}

// SetupDeregistration registers the deregistration with the manager. A Cluster is looked at when it appears,
// is deleted or its mode changes, and when one of its Works, deleted, changes.
func SetupDeregistration(mgr ctrl.Manager) error {
	d := &Deregistration{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("flotilla-registration")}
	ofNamespace := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, w client.Object) []reconcile.Request {
		if name, ok := clusterv1alpha1.ClusterOfNamespace(w.GetNamespace()); ok {
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: name}}}
		}
		return nil
	})
	deleted := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetDeletionTimestamp() != nil })
	return ctrl.NewControllerManagedBy(mgr).Named("deregistration").
		For(&clusterv1alpha1.Cluster{}, builder.WithPredicates(predicate.Funcs{UpdateFunc: deregistrationChanged})).
		Watches(&workv1alpha1.Work{}, ofNamespace, builder.WithPredicates(deleted)).
		Complete(d)
}

// deregistrationChanged says whether a Cluster update can move its deregistration: its deletion, its
// finalizers or its mode; not its status (the Deleting condition is this controller's own write).
func deregistrationChanged(e event.UpdateEvent) bool {
	o, n := e.ObjectOld, e.ObjectNew
	return (o.GetDeletionTimestamp() == nil) != (n.GetDeletionTimestamp() == nil) || !slices.Equal(o.GetFinalizers(), n.GetFinalizers()) ||
		o.GetAnnotations()[clusterv1alpha1.AnnotationUnjoin] != n.GetAnnotations()[clusterv1alpha1.AnnotationUnjoin]
}

// Reconcile gives one Cluster the finalizer, or, deleted, takes it one step further off the hub.
func (d *Deregistration) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cluster := &clusterv1alpha1.Cluster{}
	if err := d.Client.Get(ctx, req.NamespacedName, cluster); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if cluster.DeletionTimestamp == nil {
		if controllerutil.ContainsFinalizer(cluster, clusterv1alpha1.FinalizerDeregistration) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, d.patchFinalizers(ctx, cluster, controllerutil.AddFinalizer)
	}
	if !controllerutil.ContainsFinalizer(cluster, clusterv1alpha1.FinalizerDeregistration) {
		return ctrl.Result{}, nil // gone through before it had the finalizer: the work-release controller frees its Works
	}
	waiting, err := d.deregister(ctx, cluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	if waiting != nil {
		return ctrl.Result{}, d.report(ctx, cluster, waiting)
	}
	return ctrl.Result{}, d.patchFinalizers(ctx, cluster, controllerutil.RemoveFinalizer)
}

// patchFinalizers adds or removes the deregistration finalizer by a patch made against the Cluster as read.
func (d *Deregistration) patchFinalizers(ctx context.Context, cluster *clusterv1alpha1.Cluster, change func(client.Object, string) bool) error {
	patch := client.MergeFromWithOptions(cluster.DeepCopy(), client.MergeFromWithOptimisticLock{})
	change(cluster, clusterv1alpha1.FinalizerDeregistration)
	return client.IgnoreNotFound(d.Client.Patch(ctx, cluster, patch))
}

// deregister runs the next step of a deleted Cluster's deregistration and returns the Deleting condition
// that says what it waits for, or nil once the Cluster may go.
func (d *Deregistration) deregister(ctx context.Context, cluster *clusterv1alpha1.Cluster) (*metav1.Condition, error) {
	deleteResources := cluster.Annotations[clusterv1alpha1.AnnotationUnjoin] == clusterv1alpha1.UnjoinDeleteResources
	if deleteResources {
		if waiting, err := d.deleteMemberObjects(ctx, cluster); err != nil || waiting != nil {
			return waiting, err
		}
	}
	if ref := cluster.Spec.SecretRef; ref != nil {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name}}
		if err := client.IgnoreNotFound(d.Client.Delete(ctx, secret)); err != nil {
			return nil, fmt.Errorf("deleting the credentials of cluster %s: %w", cluster.Name, err)
		}
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.ClusterNamespace(cluster.Name)}}
	if err := client.IgnoreNotFound(d.Client.Delete(ctx, ns)); err != nil {
		return nil, fmt.Errorf("deleting the namespace of cluster %s: %w", cluster.Name, err)
	}
	if deleteResources {
		// A Work written between the listing above and the namespace's deletion is waited for too.
		return d.deleteMemberObjects(ctx, cluster)
	}
	return nil, nil
}

// deleteMemberObjects deletes the cluster's Works and returns the Deleting condition that names those whose
// member objects are not reported deleted yet, or nil when there are none.
func (d *Deregistration) deleteMemberObjects(ctx context.Context, cluster *clusterv1alpha1.Cluster) (*metav1.Condition, error) {
	works := &workv1alpha1.WorkList{}
	if err := d.Reader.List(ctx, works, client.InNamespace(clusterv1alpha1.ClusterNamespace(cluster.Name))); err != nil {
		return nil, err
	}
	pending, err := d.deleteWorks(ctx, works.Items)
	if err != nil || len(pending) == 0 {
		return nil, err
	}
	by := "the cluster's agent deletes them"
	if cluster.Spec.SyncMode == clusterv1alpha1.Push {
		by = "the hub deletes them with the cluster's credentials"
	}
	return &metav1.Condition{Type: clusterv1alpha1.ClusterConditionDeleting, Status: metav1.ConditionTrue, Reason: ReasonDeletingMemberObjects,
		Message: fmt.Sprintf("the member objects of %d of %d Works are not deleted yet (%s): %s",
			len(pending), len(works.Items), by, clusterv1alpha1.ListInMessage(pending))}, nil
}

// deleteWorks deletes the Works not deleted yet and returns the names of those whose member objects the
// executor has not reported deleted (WorkReasonDeleted); it keeps their finalizer until then.
func (d *Deregistration) deleteWorks(ctx context.Context, works []workv1alpha1.Work) ([]string, error) {
	var pending []string
	for i := range works {
		w := &works[i]
		if w.DeletionTimestamp == nil {
			if err := client.IgnoreNotFound(d.Client.Delete(ctx, w)); err != nil {
				return nil, err
			}
		}
		applied := meta.FindStatusCondition(w.Status.Conditions, workv1alpha1.WorkConditionApplied)
		if w.DeletionTimestamp == nil || applied == nil || applied.Reason != workv1alpha1.WorkReasonDeleted {
			pending = append(pending, w.Name)
		}
	}
	return pending, nil
}

// report applies the Deleting condition when it changed, and records an event when the deregistration
// reaches a new step.
func (d *Deregistration) report(ctx context.Context, cluster *clusterv1alpha1.Cluster, cond *metav1.Condition) error {
	previous := meta.FindStatusCondition(cluster.Status.Conditions, cond.Type)
	if previous != nil && previous.Reason == cond.Reason && previous.Message == cond.Message {
		return nil
	}
	conditions := []metav1.Condition{}
	if previous != nil {
		conditions = append(conditions, *previous)
	}
	meta.SetStatusCondition(&conditions, *cond)
	status := &clusterv1alpha1.ClusterStatus{Conditions: conditions}
	if err := scheme.ApplyStatus(ctx, d.Client, cluster, deregistrationFieldManager, status); err != nil {
		return client.IgnoreNotFound(err)
	}
	if previous == nil || previous.Reason != cond.Reason {
		d.Recorder.Eventf(cluster, nil, corev1.EventTypeNormal, cond.Reason, "Deregister", "%s", cond.Message)
	}
	return nil
}
