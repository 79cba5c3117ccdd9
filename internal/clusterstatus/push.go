package clusterstatus

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/members"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

// Reasons of the CredentialsValid condition of Push clusters.
const (
	ReasonCredentialsValid   = "CredentialsValid"
	ReasonCredentialsInvalid = "CredentialsInvalid"
)

// PushReporter does for Push clusters what the agent does for Pull ones: every heartbeat (RenewalPeriod) it
// reaches the member with the credentials in the cluster's Secret, renews the Lease and applies the status
// facts (PushFieldManager). It also owns the CredentialsValid condition, applied on its own
// (CredentialsFieldManager) so that a cluster whose credentials fail keeps its last reported facts.
type PushReporter struct {
	Client client.Client
	// Members holds a client of each push member, built from its credentials (read straight from the API
	// server: the hub caches no Secrets).
	Members  *members.Cache[kubernetes.Interface]
	Recorder events.EventRecorder
	Holder   string
	Version  string
}

// SetupPushReporter registers the push reporter with the manager.
func SetupPushReporter(mgr ctrl.Manager, holder, version string) error {
	newClient := func(_ string, cfg *rest.Config) (kubernetes.Interface, error) { return kubernetes.NewForConfig(cfg) }
	r := &PushReporter{Client: mgr.GetClient(), Members: members.NewCache(members.FromSecrets(mgr.GetAPIReader()), newClient, nil),
		Recorder: mgr.GetEventRecorder("flotilla-push-status"), Holder: holder, Version: version}
	isPush := predicate.NewPredicateFuncs(func(o client.Object) bool {
		c, ok := o.(*clusterv1alpha1.Cluster)
		return ok && c.Spec.SyncMode == clusterv1alpha1.Push
	})
	return ctrl.NewControllerManagedBy(mgr).Named("push-status").
		For(&clusterv1alpha1.Cluster{}, builder.WithPredicates(isPush, predicate.GenerationChangedPredicate{})).
		Complete(r)
}

// Reconcile reports one Push cluster and comes back after a heartbeat period.
func (r *PushReporter) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cluster := &clusterv1alpha1.Cluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, cluster); err != nil || cluster.Spec.SyncMode != clusterv1alpha1.Push {
		if err == nil || apierrors.IsNotFound(err) {
			r.Members.Drop(req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	member, err := r.Members.Get(ctx, cluster)
	var invalid *members.InvalidCredentialsError
	if err == nil || errors.As(err, &invalid) {
		if err := r.setCredentialsCondition(ctx, cluster, invalid); err != nil {
			return ctrl.Result{}, err
		}
	}
	period := HeartbeatPeriod
	if err == nil {
		reporter := &Reporter{Hub: r.Client, Member: member, Cluster: cluster.Name, Holder: r.Holder, AgentVersion: r.Version,
			FieldManager: PushFieldManager}
		err = reporter.ReportOnce(ctx)
		period = reporter.Period()
	}
	if err != nil {
		// An unreachable member gets no heartbeat; the health monitor turns it Unknown after the grace period.
		ctrl.LoggerFrom(ctx).Info("push cluster not reported", "cluster", cluster.Name, "error", err.Error())
	}
	return ctrl.Result{RequeueAfter: period}, nil
}

// setCredentialsCondition records whether the cluster's credentials can be used (invalid nil: they can), with
// an event when they turn unusable.
func (r *PushReporter) setCredentialsCondition(ctx context.Context, cluster *clusterv1alpha1.Cluster, invalid *members.InvalidCredentialsError) error {
	c := metav1.Condition{Type: clusterv1alpha1.ClusterConditionCredentialsValid, ObservedGeneration: cluster.Generation,
		Status: metav1.ConditionTrue, Reason: ReasonCredentialsValid,
		Message: "the hub reaches the member with the credentials in spec.secretRef, and it answers with the cluster's ID"}
	if invalid != nil {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonCredentialsInvalid, invalid.Error()
	}
	conditions, changed := withCondition(cluster.Status.Conditions, c)
	if !changed {
		return nil
	}
	if err := scheme.ApplyStatus(ctx, r.Client, cluster, CredentialsFieldManager, &clusterv1alpha1.ClusterStatus{Conditions: conditions}); err != nil {
		return err
	}
	if invalid != nil {
		r.Recorder.Eventf(cluster, nil, corev1.EventTypeWarning, ReasonCredentialsInvalid, "CheckCredentials", "%s", invalid.Error())
	}
	return nil
}
