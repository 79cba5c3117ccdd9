// Package hub wires the Flotilla hub: its API (an embedded control plane, or an existing cluster), the
// Flotilla CRDs, and Flotilla's controllers, which run under leader election so several hubs can share one
// etcd.
package hub

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/admission"
	"github.com/flotilla-io/flotilla/internal/clusterset"
	"github.com/flotilla-io/flotilla/internal/controlplane"
	"github.com/flotilla-io/flotilla/internal/detector"
	"github.com/flotilla-io/flotilla/internal/headroom"
	"github.com/flotilla-io/flotilla/internal/metrics"
	"github.com/flotilla-io/flotilla/internal/proxy"
	"github.com/flotilla-io/flotilla/internal/registration"
	"github.com/flotilla-io/flotilla/internal/scheme"
	"github.com/flotilla-io/flotilla/internal/shard"
	"github.com/flotilla-io/flotilla/internal/tunnel"
)

const (
	// LeaderLease is the Lease that elects the hub that runs the controllers.
	LeaderLease = "flotilla-controllers"
)

// Hub is a running hub.
type Hub struct {
	// Config reaches the hub API as cluster admin.
	Config *rest.Config
	// AdminKubeconfig is where the embedded hub wrote its admin kubeconfig; empty with --kubeconfig.
	AdminKubeconfig string
	// Identity names this hub process in the leader Lease: unique per process.
	Identity string
	// ID names the hub itself, the same for all its processes (registration.HubID); executors mark member
	// objects with it.
	ID string
	// Tunnels are the tunnels Pull clusters' agents hold open to this hub process; the hub's proxy reaches
	// those members through them.
	Tunnels *tunnel.Registry

	// DashboardURL is where the embedded hub serves the dashboard; empty without one.
	DashboardURL string

	controlPlane *controlplane.ControlPlane
	manager      ctrl.Manager
	// dashboardServer serves the dashboard on its own port (dashboard.go).
	dashboardServer *genericapiserver.GenericAPIServer

	// The proxy to members (proxy.go); only the embedded hub serves it.
	proxyLn     net.Listener
	proxyCache  cache.Cache
	proxyServer *proxy.Server
	// pullBackend reaches pull members for the proxy; nil: they answer 503, no tunnel.
	pullBackend proxy.Backend
	// agents decides, in the embedded hub's API server, what agents may do with their own Cluster.
	agents registration.AgentAuthorizer
	// headroom bounds the controllers' writes by how the users' writes fare in the embedded hub's API server
	// (internal/headroom); nil for a hub over an existing cluster, whose API server is not in this process.
	headroom *headroom.Limiter
	// webhook serves the admission checks in Go to an existing cluster's API server; nil for the embedded hub,
	// whose API server runs them in process.
	webhook *admission.Webhook
	// ops serves the metrics and probes of a hub over an existing cluster (metrics.go); nil for the embedded
	// hub, whose API server serves them.
	ops     *metrics.Server
	stopOps context.CancelFunc
}

// Start brings the hub up to the point where its API serves every Flotilla kind and, for the embedded hub,
// admin.kubeconfig is written. The controllers start with Run.
func Start(ctx context.Context, o *Options, progress func(string)) (_ *Hub, err error) {
	h := &Hub{Tunnels: tunnel.NewRegistry()}
	h.pullBackend = &proxy.PullBackend{Tunnels: h.Tunnels}
	defer func() {
		if err != nil {
			h.stop()
		}
	}()
	if o.Embedded() {
		if err := h.startControlPlane(ctx, o, progress); err != nil {
			return nil, err
		}
	} else {
		loader := &clientcmd.ClientConfigLoadingRules{ExplicitPath: o.Kubeconfig}
		h.Config, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(loader,
			&clientcmd.ConfigOverrides{CurrentContext: o.Context}).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("--kubeconfig %s: %w", o.Kubeconfig, err)
		}
		if !o.AllowWorkloads {
			if err := CheckNoWorkloads(ctx, h.Config); err != nil {
				return nil, err
			}
		}
		host, _ := os.Hostname()
		h.Identity = host + "_" + string(uuid.NewUUID())
	}
	h.Config.QPS, h.Config.Burst = 200, 400

	// The admission policies go first: the API server takes a second or two to enforce them, time the CRDs
	// take to be established anyway.
	settings := admission.Settings{CredentialGroups: o.ClusterCredentialGroups, ControllersUser: ControllersUser, AllowLocalEndpoints: o.AllowLocalMemberEndpoints}
	if !o.Embedded() {
		if settings.ControllersUser, err = selfUser(ctx, h.Config); err != nil {
			return nil, err
		}
	}
	if err := admission.InstallPolicies(ctx, h.Config, settings); err != nil {
		return nil, err
	}
	if err := InstallCRDs(ctx, h.Config, o.KarmadaAPIs, o.OCMAPIs); err != nil {
		return nil, err
	}
	if err := ensureNamespace(ctx, h.Config, clusterv1alpha1.SystemNamespace); err != nil {
		return nil, err
	}
	// The embedded API server runs the checks in Go in process; an existing cluster's calls them here.
	if !o.Embedded() {
		if h.webhook, err = admission.ServeWebhook(ctx, h.Config, o.webhookOptions()); err != nil {
			return nil, err
		}
		progress("admission webhook served at " + h.webhook.Address)
	}
	if err := admission.WaitEnforced(ctx, h.Config); err != nil {
		return nil, err
	}
	progress(fmt.Sprintf("Flotilla CRDs established, admission policies enforced, namespace %s ready", clusterv1alpha1.SystemNamespace))

	var front *rest.Config
	var frontKubeconfig string
	if o.Embedded() {
		h.AdminKubeconfig = controlplane.AdminKubeconfigPath(o.DataDir)
		if err := h.controlPlane.WriteAdminKubeconfig(h.AdminKubeconfig); err != nil {
			return nil, err
		}
		if frontKubeconfig, front, err = h.installFrontIdentity(ctx); err != nil {
			return nil, err
		}
		if err := h.startProxy(ctx, o, frontKubeconfig); err != nil {
			return nil, err
		}
		if err := h.authorizeAgents(ctx); err != nil {
			return nil, err
		}
	}
	selected, err := Controllers.Select(o.Controllers)
	if err != nil {
		return nil, err
	}
	if err := h.publishForAgents(ctx); err != nil {
		return nil, err
	}
	mode, err := h.recordClusterSetMode(ctx, o.ClusterSetMode)
	if err != nil {
		return nil, err
	}
	progress(fmt.Sprintf("cluster-set mode %s (ConfigMap %s/%s)", mode, clusterv1alpha1.SystemNamespace, clusterset.ModeConfigMap))
	if o.RegisterHost != "" {
		if err := h.registerHost(ctx, o, progress); err != nil {
			return nil, err
		}
	}
	if o.Embedded() && len(o.EtcdServers) == 0 {
		if err := releaseOwnStaleLease(ctx, h.Config, h.Identity, o.DataDir); err != nil {
			return nil, err
		}
	}
	// The embedded hub's controllers run as a user of their own (identity.go); on an existing cluster they
	// keep the identity of --kubeconfig, whose administrator decides its rights and priority.
	controllersConfig := h.Config
	if o.Embedded() {
		if controllersConfig, err = h.installControllersIdentity(ctx); err != nil {
			return nil, err
		}
		controllersConfig.Wrap(h.headroom.Wrap)
	}
	progress("controllers elect their leader as " + h.Identity)
	if h.manager, err = newManager(controllersConfig, Settings{Options: o, Identity: h.Identity, HubID: h.ID, Version: o.Version, Tunnels: h.Tunnels, HubURL: h.Config.Host}, selected); err != nil {
		return nil, err
	}
	if err := h.serveMetrics(ctx, o, h.manager.GetCache()); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	if h.ops != nil {
		progress("metrics at http://" + h.ops.Address + "/metrics, probes at /healthz and /readyz")
	}
	if o.Embedded() && o.Dashboard {
		if err := h.startDashboard(ctx, o, h.manager.GetCache(), front, frontKubeconfig); err != nil {
			return nil, err
		}
		progress("dashboard at " + h.DashboardURL)
	}
	return h, nil
}

// Etcd returns where the embedded hub's kube-apiserver stores its objects and the identity it uses there;
// nothing for a hub on an existing cluster.
func (h *Hub) Etcd() ([]string, *controlplane.EtcdTLS) {
	if h.controlPlane == nil {
		return nil, nil
	}
	return h.controlPlane.EtcdServers, h.controlPlane.EtcdTLS
}

func (h *Hub) startControlPlane(ctx context.Context, o *Options, progress func(string)) error {
	h.headroom = headroom.New(func(limit int) { metrics.ControllersWriteLimit.Set(float64(limit)) })
	cfg := controlplane.Config{
		Name:        "flotilla-hub",
		DataDir:     o.DataDir,
		BindAddress: net.ParseIP(o.BindAddress),
		SecurePort:  o.SecurePort,
		TLSSANs:     o.TLSSANs,
		EtcdServers: o.EtcdServers,
		EtcdPrefix:  o.EtcdPrefix,
		// Works carry the manifests of propagated Secrets.
		EncryptedResources: []string{"works.work.flotilla.io"},
		// The API server's watch cache keeps, besides every object, each version written in the last 75 s
		// and, at rest, the versions of the last burst until new events push them out. Clusters and bindings
		// are watched by the controllers' one cache (and the dashboard's, a user's kubectl): a cache serves
		// them no better than etcd does, yet at 1,000 clusters it held thousands of Cluster versions written
		// while they joined, and each binding status written during a fan-out, 256 KB as JSON and several
		// times that decoded. Works stay cached: every agent watches its own.
		UncachedResources: []string{"clusters.cluster.flotilla.io", "resourcebindings.work.flotilla.io", "clusterresourcebindings.work.flotilla.io"},
		Controllers:       controlplane.HubControllers,
		// Several hubs on one external etcd elect one kube-controller-manager; alone, there is nobody to
		// elect against and a restart should not wait for its own old lease to expire.
		LeaderElect:      len(o.EtcdServers) > 0,
		SigningDuration:  o.MaxAgentCertTTL,
		Progress:         progress,
		Profiling:        o.Profiling,
		Authorizer:       authorizer.AuthorizerFunc(h.agents.Authorize),
		AdmissionPlugins: admission.Plugins(),
		WrapHandler:      h.headroom.Observe(hubComponent),
		// Without credentials one may ask whether the hub is up and which version it runs, and read the
		// cluster-info joining agents verify against their CA pin; nothing else, whatever RBAC grants
		// system:unauthenticated.
		AnonymousPaths: []string{"/livez", "/readyz", "/version",
			"/api/v1/namespaces/" + registration.ClusterInfoNamespace + "/configmaps/" + registration.ClusterInfoName},
	}
	if o.AdvertiseAddress != "" {
		cfg.AdvertiseAddress = net.ParseIP(o.AdvertiseAddress)
	}
	if o.EtcdTLS != (controlplane.EtcdTLS{}) {
		cfg.EtcdTLS = &o.EtcdTLS
	}
	var err error
	if cfg.LocalServices, err = h.proxyListener(); err != nil {
		return err
	}
	cp, err := controlplane.Start(ctx, cfg)
	if err != nil {
		return err
	}
	h.controlPlane = cp
	if h.Config, err = cp.RESTConfig(); err != nil {
		return err
	}
	_, h.Identity, err = controlplane.ProcessIdentity(o.DataDir, hubIDFile)
	return err
}

// hubIDFile keeps the stable part of the hub's identity in its data directory.
const hubIDFile = "hub-id"

// releaseOwnStaleLease frees the leader Lease when a previous process on this data directory held it, so a hub
// restarted after a crash leads at once instead of waiting for its old lease to expire. Only with the embedded
// etcd: nobody else stores in it, and the data directory's lock says the previous process is gone. (A copy
// of the directory runs its own etcd, so it cannot be the holder.)
func releaseOwnStaleLease(ctx context.Context, cfg *rest.Config, identity, dataDir string) error {
	stable, _, err := controlplane.ProcessIdentity(dataDir, hubIDFile)
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	lease, err := kube.CoordinationV1().Leases(clusterv1alpha1.SystemNamespace).Get(ctx, LeaderLease, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return fmt.Errorf("reading the leader Lease: %w", err)
	}
	holder := ptr.Deref(lease.Spec.HolderIdentity, "")
	if holder == identity || !strings.HasPrefix(holder, stable+"_") {
		return nil
	}
	lease.Spec.HolderIdentity = nil
	if _, err := kube.CoordinationV1().Leases(clusterv1alpha1.SystemNamespace).Update(ctx, lease, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("releasing the leader Lease of a previous run: %w", err)
	}
	return nil
}

// Run runs the controllers (when this hub leads) until ctx ends or a component fails, then shuts down in
// order: controllers, kube-apiserver, etcd.
func (h *Hub) Run(ctx context.Context) error {
	defer h.stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	managerDone := make(chan error, 1)
	go func() { managerDone <- h.manager.Start(ctx) }()
	h.ops.SetReady(true)
	defer h.ops.SetReady(false)

	// What the hub runs besides its controllers and servers: the embedded control plane, or over an existing
	// cluster the admission webhook.
	var failed <-chan error
	if h.controlPlane != nil {
		failed = h.controlPlane.Failed()
	} else if h.webhook != nil {
		failed = h.webhook.Failed()
	}
	serverFailed := make(chan error, 2)
	if h.proxyServer != nil {
		go func() { serverFailed <- h.runProxy(ctx) }()
	}
	if h.dashboardServer != nil {
		go func() { serverFailed <- h.runDashboard(ctx) }()
	}
	select {
	case <-ctx.Done():
		cancel()
		return <-managerDone
	case err := <-failed:
		cancel()
		<-managerDone
		return err
	case err := <-serverFailed:
		// nil: ctx ended, as in the first case.
		cancel()
		if managerErr := <-managerDone; err == nil {
			return managerErr
		}
		return err
	case err := <-managerDone:
		if err == nil {
			err = errors.New("controllers stopped")
		}
		return fmt.Errorf("controllers: %w", err)
	}
}

func (h *Hub) stop() {
	h.Tunnels.Close()
	if h.proxyLn != nil {
		// Serving closes it too; this covers a hub that failed before serving.
		_ = h.proxyLn.Close()
	}
	if h.webhook != nil {
		h.webhook.Stop()
	}
	if h.stopOps != nil {
		h.stopOps()
	}
	if h.controlPlane != nil {
		h.controlPlane.Stop()
	}
}

// newManager builds the controller manager: every selected controller, leader election on a Lease in
// flotilla-system held under this hub's identity, with --shard this hub's member of the shard group, no metrics listener of its own: the hub serves its metrics
// (metrics.go).
func newManager(cfg *rest.Config, s Settings, controllers Registry) (ctrl.Manager, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, clusterv1alpha1.SystemNamespace, LeaderLease,
		kube.CoreV1(), kube.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: s.Identity})
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme.New(),
		Cache:  CacheOptions(),
		// Templates are read as unstructured objects through the template watches (detector.Templates), which
		// follow the policies. Unstructured reads through this client go to the API server: a watch of the
		// manager's cache would hold the kind in every namespace, with nothing to stop it.
		Client: client.Options{Cache: &client.CacheOptions{Unstructured: false}},
		// Reconciles mostly wait on API writes, so several per controller keep a burst of templates moving;
		// with one at a time, 100 Deployments took seconds just to be scheduled.
		Controller:                          config.Controller{MaxConcurrentReconciles: 8},
		Metrics:                             metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:              "0",
		LeaderElection:                      true,
		LeaderElectionID:                    LeaderLease,
		LeaderElectionNamespace:             clusterv1alpha1.SystemNamespace,
		LeaderElectionResourceLockInterface: lock,
		LeaderElectionReleaseOnCancel:       true,
	})
	if err != nil {
		return nil, err
	}
	if s.Templates, err = detector.NewTemplates(mgr, s.Shard); err != nil {
		return nil, err
	}
	if s.Shard {
		group, err := shard.NewGroup(kube.CoordinationV1().Leases(clusterv1alpha1.SystemNamespace), s.Identity, s.ShardLeaseDuration)
		if err != nil {
			return nil, err
		}
		if err := mgr.Add(group); err != nil {
			return nil, err
		}
		s.Group = group
	}
	for _, c := range controllers {
		if err := c.Setup(mgr, s); err != nil {
			return nil, fmt.Errorf("controller %s: %w", c.Name, err)
		}
	}
	return mgr, nil
}

// authorizeAgents lets the API server's AgentAuthorizer decide by the proxy's cache of Clusters, and says
// so on the system namespace, so registrations bind no ClusterRole per agent.
func (h *Hub) authorizeAgents(ctx context.Context) error {
	c, err := client.New(h.Config, client.Options{Scheme: scheme.New()})
	if err != nil {
		return err
	}
	h.agents.Use(h.proxyCache, c)
	return registration.AuthorizeAgentsInHub(ctx, c)
}

// publishForAgents learns the hub's ID and publishes it, with the hub's address and CA, for agents'
// discovery, lets bootstrap tokens file CSRs, and gives clusters registered by earlier versions what
// registering gives them now (their report quota, their agent Role's rules).
func (h *Hub) publishForAgents(ctx context.Context) error {
	caPEM, err := registration.HubCA(h.Config)
	if err != nil {
		return err
	}
	c, err := client.New(h.Config, client.Options{Scheme: scheme.New()})
	if err != nil {
		return err
	}
	if h.ID, err = registration.HubID(ctx, c); err != nil {
		return err
	}
	if err := registration.EnsureReportQuotas(ctx, c); err != nil {
		return err
	}
	if err := registration.EnsureAgentRoles(ctx, c); err != nil {
		return err
	}
	return registration.EnsureHubObjects(ctx, c, h.Config.Host, caPEM, h.ID)
}

// recordClusterSetMode records where namespaces without a ClusterSetBinding may place, before the
// scheduler starts (clusterset.RecordMode).
func (h *Hub) recordClusterSetMode(ctx context.Context, want clusterset.Mode) (clusterset.Mode, error) {
	c, err := client.New(h.Config, client.Options{Scheme: scheme.New()})
	if err != nil {
		return "", err
	}
	return clusterset.RecordMode(ctx, c, want)
}

func ensureNamespace(ctx context.Context, cfg *rest.Config, name string) error {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}
