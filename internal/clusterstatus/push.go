package clusterstatus

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

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
	"github.com/flotilla-io/flotilla/internal/registration"
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
	// Secrets reads credentials straight from the API server, so the hub caches no Secrets.
	Secrets  client.Reader
	Recorder events.EventRecorder
	Holder   string
	Version  string
}

// SetupPushReporter registers the push reporter with the manager.
func SetupPushReporter(mgr ctrl.Manager, holder, version string) error {
	r := &PushReporter{Client: mgr.GetClient(), Secrets: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("flotilla-push-status"),
		Holder: holder, Version: version}
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
	if err := r.Client.Get(ctx, req.NamespacedName, cluster); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if cluster.Spec.SyncMode != clusterv1alpha1.Push {
		return ctrl.Result{}, nil
	}
	cfg, err := MemberConfig(ctx, r.Secrets, cluster)
	var member kubernetes.Interface
	if err == nil {
		member, err = kubernetes.NewForConfig(cfg)
	}
	var invalid *InvalidCredentialsError
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
func (r *PushReporter) setCredentialsCondition(ctx context.Context, cluster *clusterv1alpha1.Cluster, invalid *InvalidCredentialsError) error {
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
	if err := applyStatus(ctx, r.Client, cluster.Name, CredentialsFieldManager, &clusterv1alpha1.ClusterStatus{Conditions: conditions}); err != nil {
		return err
	}
	if invalid != nil {
		r.Recorder.Eventf(cluster, nil, corev1.EventTypeWarning, ReasonCredentialsInvalid, "CheckCredentials", "%s", invalid.Error())
	}
	return nil
}

// InvalidCredentialsError says a Push cluster's Secret is missing or holds credentials the hub refuses to use.
// Other errors reading the Secret are passing trouble, not a verdict on the credentials.
type InvalidCredentialsError struct{ err error }

func (e *InvalidCredentialsError) Error() string { return e.err.Error() }
func (e *InvalidCredentialsError) Unwrap() error { return e.err }

// checkClusterID confirms that the member answers with the Cluster's ID (its kube-system namespace's UID):
// a changed endpoint, proxy or Secret that leads to another cluster is refused before anything is sent
// there. A member that cannot be reached is passing trouble; one that answers as another cluster, or does
// not let the credentials read kube-system, is an invalid credential.
func checkClusterID(ctx context.Context, member kubernetes.Interface, cluster *clusterv1alpha1.Cluster) error {
	if cluster.Spec.ID == "" {
		return nil
	}
	ns, err := member.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
	switch {
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
		return &InvalidCredentialsError{fmt.Errorf("the credentials cannot read namespace kube-system at %s, so the hub cannot confirm it is cluster %s: %w",
			cluster.Spec.APIEndpoint, cluster.Spec.ID, err)}
	case err != nil:
		return err
	case string(ns.UID) != cluster.Spec.ID:
		return &InvalidCredentialsError{fmt.Errorf("the member at %s is cluster %s, not %s (spec.id): its endpoint or credentials lead to another cluster, and the hub uses neither",
			cluster.Spec.APIEndpoint, ns.UID, cluster.Spec.ID)}
	}
	return nil
}

// confirmAgain is how long a confirmation that a push member answers with its Cluster's ID holds: the
// member behind an unchanged endpoint is confirmed again after it, a changed endpoint at once.
const confirmAgain = 10 * time.Minute

// confirmation is what a Cluster's member was confirmed for (credentialFields) and when.
type confirmation struct {
	fields string
	at     time.Time
}

// confirmed holds, per Cluster UID, the last confirmation of its member in this process: every user of
// MemberConfig (status, execution, the proxy, service collection) shares it, so a member is asked once.
var confirmed sync.Map

// credentialFields are the Cluster's fields that decide where the hub's requests go and as whom.
func credentialFields(c *clusterv1alpha1.Cluster) string {
	ref := ""
	if c.Spec.SecretRef != nil {
		ref = c.Spec.SecretRef.Namespace + "/" + c.Spec.SecretRef.Name
	}
	return strings.Join([]string{c.Spec.APIEndpoint, c.Spec.ProxyURL, strconv.FormatBool(c.Spec.InsecureSkipTLSVerification), ref, c.Spec.ID}, "|")
}

// MemberConfig returns the client configuration of a Push cluster, from its spec and the Secret it names.
// Before the hub uses an endpoint, proxy or Secret it has not used for this Cluster, it confirms that the
// member answers with the Cluster's ID (checkClusterID); one that answers as another cluster is an
// InvalidCredentialsError.
func MemberConfig(ctx context.Context, hub client.Reader, cluster *clusterv1alpha1.Cluster) (*rest.Config, error) {
	cfg, err := memberConfig(ctx, hub, cluster)
	if err != nil {
		return nil, err
	}
	fields := credentialFields(cluster)
	if last, ok := confirmed.Load(cluster.UID); ok && last.(confirmation).fields == fields && time.Since(last.(confirmation).at) < confirmAgain {
		return cfg, nil
	}
	member, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, &InvalidCredentialsError{err}
	}
	if err := checkClusterID(ctx, member, cluster); err != nil {
		return nil, err
	}
	confirmed.Store(cluster.UID, confirmation{fields: fields, at: time.Now()})
	return cfg, nil
}

// memberConfig builds the client configuration of a Push cluster without confirming it.
func memberConfig(ctx context.Context, hub client.Reader, cluster *clusterv1alpha1.Cluster) (*rest.Config, error) {
	ref := cluster.Spec.SecretRef
	if ref == nil {
		return nil, &InvalidCredentialsError{fmt.Errorf("push cluster %s has no spec.secretRef", cluster.Name)}
	}
	secret := &corev1.Secret{}
	if err := hub.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, secret); err != nil {
		err = fmt.Errorf("credentials of push cluster %s: %w", cluster.Name, err)
		if apierrors.IsNotFound(err) {
			return nil, &InvalidCredentialsError{err}
		}
		return nil, err
	}
	cfg, err := registration.PushRESTConfig(cluster, secret)
	if err != nil {
		return nil, &InvalidCredentialsError{fmt.Errorf("credentials of push cluster %s in Secret %s/%s: %w", cluster.Name, ref.Namespace, ref.Name, err)}
	}
	cfg.Timeout = HeartbeatPeriod
	return cfg, nil
}
