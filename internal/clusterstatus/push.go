package clusterstatus

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// PushReporter does for Push clusters what the agent does for Pull ones: every HeartbeatPeriod it reaches
// the member with the credentials in the cluster's Secret, renews the Lease and writes the status.
type PushReporter struct {
	Client client.Client
	// Secrets reads credentials straight from the API server, so the hub caches no Secrets.
	Secrets client.Reader
	Holder  string
	Version string
}

// SetupPushReporter registers the push reporter with the manager.
func SetupPushReporter(mgr ctrl.Manager, holder, version string) error {
	r := &PushReporter{Client: mgr.GetClient(), Secrets: mgr.GetAPIReader(), Holder: holder, Version: version}
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
	member, err := MemberClient(ctx, r.Secrets, cluster)
	if err == nil {
		reporter := &Reporter{Hub: r.Client, Member: member, Cluster: cluster.Name, Holder: r.Holder, AgentVersion: r.Version}
		err = reporter.ReportOnce(ctx)
	}
	if err != nil {
		// An unreachable member gets no heartbeat; the health monitor turns it Unknown after the grace period.
		ctrl.LoggerFrom(ctx).Info("push cluster not reported", "cluster", cluster.Name, "error", err.Error())
	}
	return ctrl.Result{RequeueAfter: HeartbeatPeriod}, nil
}

// MemberClient builds a client for a Push cluster from the kubeconfig in its Secret.
func MemberClient(ctx context.Context, hub client.Reader, cluster *clusterv1alpha1.Cluster) (kubernetes.Interface, error) {
	cfg, err := MemberConfig(ctx, hub, cluster)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// MemberConfig returns the client configuration in a Push cluster's Secret.
func MemberConfig(ctx context.Context, hub client.Reader, cluster *clusterv1alpha1.Cluster) (*rest.Config, error) {
	ref := cluster.Spec.SecretRef
	if ref == nil {
		return nil, fmt.Errorf("push cluster %s has no spec.secretRef", cluster.Name)
	}
	secret := &corev1.Secret{}
	if err := hub.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, secret); err != nil {
		return nil, fmt.Errorf("credentials of push cluster %s: %w", cluster.Name, err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data["kubeconfig"])
	if err != nil {
		return nil, fmt.Errorf("credentials of push cluster %s: key kubeconfig of Secret %s/%s: %w", cluster.Name, ref.Namespace, ref.Name, err)
	}
	cfg.Timeout = HeartbeatPeriod
	return cfg, nil
}
