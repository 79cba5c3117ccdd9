// Package agent runs next to a member cluster: it keeps the cluster's hub identity (joining with a bootstrap
// token once, renewing its certificate after) and those of its add-ons' agents, reports the member's health
// and status to the hub, applies the cluster's Works to the member, and reports the EndpointSlices of the
// member's exported Services.
package agent

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"

	addonv1alpha1 "github.com/flotilla-io/flotilla/api/addon/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/clusterstatus"
	"github.com/flotilla-io/flotilla/internal/execution"
	"github.com/flotilla-io/flotilla/internal/mcs"
	"github.com/flotilla-io/flotilla/internal/metrics"
	"github.com/flotilla-io/flotilla/internal/registration"
	"github.com/flotilla-io/flotilla/internal/scheme"
	"github.com/flotilla-io/flotilla/internal/tunnel"
)

// Options configure an agent.
type Options struct {
	// DataDir keeps the agent's hub credential when it runs outside the member.
	DataDir string
	// ClusterKubeconfig reaches the member cluster; empty means the in-cluster configuration.
	ClusterKubeconfig string
	// ClusterContext is the context of ClusterKubeconfig that reaches the member; empty means its current
	// context.
	ClusterContext string
	// CredentialSecret names the Secret of the agent's namespace that keeps its hub credential when it runs
	// in the member.
	CredentialSecret string
	// CertTTL is the lifetime asked for each certificate; RenewBefore is how long before expiry it is renewed
	// (0: when a fifth of its life is left).
	CertTTL, RenewBefore time.Duration
	// Version is the agent's version, reported in the cluster's status.
	Version string
	// MetricsBindAddress is where the agent serves its Prometheus metrics (plain HTTP, no authentication:
	// bind it to the pod's or the loopback address); "0" serves none.
	MetricsBindAddress string
	// HealthProbeBindAddress is where the agent serves /healthz and /readyz (plain HTTP); "0" serves none.
	HealthProbeBindAddress string
	// Health is the probes' server, started with ServeHealth before a join so that a pod waiting to join is
	// alive; Run marks it ready while it runs.
	Health *metrics.Server
}

// MemberConfig returns the client configuration for the member cluster. Requests time out within a
// heartbeat period, so a hung member stops the heartbeat instead of the agent.
func (o *Options) MemberConfig() (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if o.ClusterKubeconfig != "" {
		if cfg, err = MemberKubeconfig(o.ClusterKubeconfig, o.ClusterContext).ClientConfig(); err != nil {
			return nil, fmt.Errorf("member kubeconfig %s: %w", o.ClusterKubeconfig, err)
		}
	} else if cfg, err = inClusterConfig(); err != nil {
		return nil, fmt.Errorf("--cluster-kubeconfig is required outside a cluster: %w", err)
	}
	if err != nil {
		return nil, err
	}
	cfg.Timeout = clusterstatus.HeartbeatPeriod
	return cfg, nil
}

// MemberKubeconfig is the member's kubeconfig file at path, with context (empty: its current context).
func MemberKubeconfig(path, context string) clientcmd.ClientConfig {
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(&clientcmd.ClientConfigLoadingRules{ExplicitPath: path},
		&clientcmd.ConfigOverrides{CurrentContext: context})
}

// InCluster reports whether the agent runs in the member: no --cluster-kubeconfig, and the environment a
// kubelet gives a pod.
func (o *Options) InCluster() bool {
	return o.ClusterKubeconfig == "" && os.Getenv("KUBERNETES_SERVICE_HOST") != ""
}

// Credential returns where the agent keeps its hub credential: in its Secret when it runs in the member (a
// new pod keeps the identity), else in its data directory.
func (o *Options) Credential(member kubernetes.Interface) (registration.Credential, error) {
	if !o.InCluster() {
		return registration.NewCredential(o.DataDir), nil
	}
	namespace, err := InClusterNamespace()
	if err != nil {
		return registration.Credential{}, err
	}
	return registration.NewSecretCredential(member, namespace, o.CredentialSecret), nil
}

// Run runs a joined agent until ctx ends: it reports the member's status every heartbeat period and renews
// the hub certificate before it expires, then reports with the new one.
func Run(ctx context.Context, o *Options, progress func(string)) error {
	memberConfig, err := o.MemberConfig()
	if err != nil {
		return err
	}
	metrics.RegisterAgent()
	if served, err := serveMetrics(ctx, o.MetricsBindAddress); err != nil {
		return err
	} else if served != nil {
		progress("metrics served at http://" + served.Address + "/metrics")
	}
	memberKube, err := kubernetes.NewForConfig(memberConfig)
	if err != nil {
		return err
	}
	cred, err := o.Credential(memberKube)
	if err != nil {
		return err
	}
	if joined, err := cred.Exists(); err != nil {
		return err
	} else if !joined {
		return registration.ErrNotJoined
	}
	cluster, err := cred.ClusterName()
	if err != nil {
		return err
	}
	if expired, notAfter, err := cred.Expired(time.Now()); err != nil {
		return err
	} else if expired {
		return fmt.Errorf("the hub certificate in %s expired at %s; to recover, %s", cred.Path, notAfter.Format(time.RFC3339), recovery(cluster))
	}
	progress(fmt.Sprintf("agent of cluster %s reporting to the hub every quarter of the hub's grace period (at least every %s)",
		cluster, clusterstatus.HeartbeatPeriod))
	if err := runTunnel(ctx, cred, cluster, memberConfig, memberKube, progress); err != nil {
		return err
	}
	o.Health.SetReady(true)
	defer o.Health.SetReady(false)
	for {
		cert, err := cred.Certificate()
		if err != nil {
			return err
		}
		renewAt := cert.NotAfter.Add(-o.renewBefore(cert.NotAfter.Sub(cert.NotBefore)))
		if err := report(ctx, cred, memberConfig, memberKube, cluster, o, time.Until(renewAt)); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
		if err := renew(ctx, cred, cert.NotAfter, o.CertTTL); err != nil {
			return err
		}
		if cert, err := cred.Certificate(); err == nil {
			progress(fmt.Sprintf("hub certificate renewed; valid until %s", cert.NotAfter.Format(time.RFC3339)))
		}
	}
}

// renew renews the hub certificate, retrying with backoff until it expires at notAfter: an unreachable hub
// is waited for. A denial (the registration ended or was given to another agent) and an expired certificate
// end the agent with how to recover: join again with a new token on the same data directory, which the hub
// finishes once an administrator accepts it (the Cluster, its Works and its objects stay as they are).
func renew(ctx context.Context, cred registration.Credential, notAfter time.Time, ttl time.Duration) error {
	cluster, _ := cred.ClusterName()
	var last error
	err := wait.ExponentialBackoffWithContext(ctx, wait.Backoff{Duration: time.Second, Factor: 2, Steps: math.MaxInt32, Cap: 5 * time.Minute},
		func(ctx context.Context) (bool, error) {
			last = cred.Renew(ctx, ttl)
			switch {
			case last == nil:
				return true, nil
			case errors.Is(last, registration.ErrDenied):
				return false, last
			case !time.Now().Before(notAfter):
				return false, fmt.Errorf("the hub certificate expired at %s: %w", notAfter.Format(time.RFC3339), last)
			}
			klog.FromContext(ctx).Error(last, "renewing the hub certificate; retrying until it expires", "expires", notAfter)
			return false, nil
		})
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("renewing the hub certificate: %w; to recover, %s", err, recovery(cluster))
	}
	return nil
}

// recovery says how an agent whose certificate expired or was refused gets a new identity for cluster.
func recovery(cluster string) string {
	return fmt.Sprintf("join again with a new token on the same data directory (flotilla join HUB_URL --token-file FILE --cluster-name %s ..., "+
		"or a new token in the agent's Secret and a restart in the member), then run flotilla accept %s on the hub", cluster, cluster)
}

// runTunnel keeps the cluster's tunnel to the hub open, in the background until ctx ends, so the hub's proxy
// reaches the member's API server. It says when the agent's member credential cannot impersonate: the tunnel
// still opens, and the member refuses what the hub forwards until the right is granted.
func runTunnel(ctx context.Context, cred registration.Credential, cluster string, memberConfig *rest.Config,
	memberKube kubernetes.Interface, progress func(string)) error {
	memberProxy, err := tunnel.MemberProxy(memberConfig)
	if err != nil {
		return fmt.Errorf("tunnel: %w", err)
	}
	if missing, err := registration.MissingImpersonation(ctx, memberKube); err != nil {
		klog.FromContext(ctx).Error(err, "checking the member credential's impersonation rights")
	} else if len(missing) > 0 {
		progress(fmt.Sprintf("warning: the member credential lacks %s: requests through the hub's proxy will be refused by the member",
			strings.Join(missing, ", ")))
	}
	go (&tunnel.Agent{Cluster: cluster, HubConfig: cred.RESTConfig, Member: memberProxy}).Run(ctx)
	return nil
}

func (o *Options) renewBefore(lifetime time.Duration) time.Duration {
	if o.RenewBefore > 0 {
		return o.RenewBefore
	}
	return lifetime / 5
}

// report runs, with the current credential, for d or until ctx ends: the status reporter, and the executor
// that applies the cluster's Works to the member.
func report(ctx context.Context, cred registration.Credential, memberConfig *rest.Config, memberKube kubernetes.Interface,
	cluster string, o *Options, d time.Duration) error {
	hubConfig, err := cred.RESTConfig()
	if err != nil {
		return err
	}
	// client-go's default of 5 requests/s made a burst of Works queue for seconds on the agent's side; the
	// hub's API priority and fairness, not a client limit, is what protects it from many agents.
	hubConfig.QPS, hubConfig.Burst = 100, 200
	namespace := clusterv1alpha1.ClusterNamespace(cluster)
	mgr, err := ctrl.NewManager(hubConfig, ctrl.Options{
		Scheme: scheme.New(),
		Cache:  cache.Options{DefaultNamespaces: map[string]cache.Config{namespace: {}}},
		// Run serves the metrics, once for every period's manager (serveMetrics).
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return err
	}
	hub, err := client.New(hubConfig, client.Options{Scheme: scheme.New()})
	if err != nil {
		return err
	}
	// The hub's ID goes into the mark on what the executor applies. It is read again with each certificate,
	// so a hub upgraded to publish one is followed within a certificate's lifetime.
	hubID, err := registration.PublishedHubID(ctx, hub)
	if err != nil {
		return err
	}
	if hubID == "" {
		klog.FromContext(ctx).Info("the hub publishes no ID (it is older than this agent): member objects are marked as by earlier versions, without the hub's ID")
	}
	// The Cluster is read straight from the hub: the agent may get its own Cluster but not watch them all.
	// The sweep reads a Work live before it lets go of an object the Work no longer lists.
	executor := &execution.Executor{Hub: mgr.GetClient(), Clusters: mgr.GetAPIReader(), Works: mgr.GetAPIReader(), FieldManager: clusterstatus.AgentFieldManager, HubID: hubID}
	member, err := execution.NewMember(memberConfig)
	if err != nil {
		return err
	}
	member.WatchApplied(executor.Notify)
	defer member.Stop()
	executor.MemberFor = func(context.Context, string) (*execution.Member, error) { return member, nil }
	err = executor.SetupWithManager(mgr, "execution", controller.Options{MaxConcurrentReconciles: 8, SkipNameValidation: ptr.To(true)})
	if err != nil {
		return err
	}
	// The collector reports the member's EndpointSlices of the Services the hub asks this cluster to export.
	// A cluster registered by an older hub has no right to read export requests: its agent runs without the
	// collector rather than fail to start its Works' execution waiting for a cache it may not fill.
	err = hub.List(ctx, &mcsv1alpha1.ServiceExportList{}, client.InNamespace(namespace), client.Limit(1))
	switch {
	case err == nil:
		if err := mcs.SetupAgentCollector(mgr, memberConfig, cluster, clusterstatus.AgentFieldManager); err != nil {
			return err
		}
	case apierrors.IsForbidden(err) || meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
		klog.FromContext(ctx).Info("not reporting multi-cluster service endpoints: the hub does not let this agent read export requests", "reason", err.Error())
	default:
		return err
	}
	// The agent keeps the hub credentials of its cluster's add-on agents. A cluster registered by an older hub
	// may not read its ClusterAddOns: its agent runs without add-on credentials.
	err = hub.List(ctx, &addonv1alpha1.ClusterAddOnList{}, client.InNamespace(namespace), client.Limit(1))
	switch {
	case err == nil:
		if err := registration.SetupAgentAddOnCredentials(mgr, hubConfig, memberKube, cluster, o.CertTTL, o.RenewBefore); err != nil {
			return err
		}
	case apierrors.IsForbidden(err) || meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
		klog.FromContext(ctx).Info("not keeping add-on credentials: the hub does not let this agent read its ClusterAddOns", "reason", err.Error())
	default:
		return err
	}
	user, err := cred.User()
	if err != nil {
		return err
	}
	reporter := &clusterstatus.Reporter{Hub: hub, Member: memberKube, Cluster: cluster, Holder: user, AgentVersion: o.Version}
	periodCtx, cancel := context.WithTimeout(ctx, max(d, 0))
	defer cancel()
	managerDone := make(chan error, 1)
	go func() { managerDone <- mgr.Start(periodCtx) }()
	reporter.Run(periodCtx)
	if err := <-managerDone; err != nil && periodCtx.Err() == nil {
		return fmt.Errorf("executing Works: %w", err)
	}
	return nil
}
