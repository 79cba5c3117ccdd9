package hub

import (
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/admission"
	"github.com/flotilla-io/flotilla/internal/clusterset"
	"github.com/flotilla-io/flotilla/internal/clusterstatus"
	"github.com/flotilla-io/flotilla/internal/controlplane"
	"github.com/flotilla-io/flotilla/internal/scheduler"
	"github.com/flotilla-io/flotilla/internal/shard"
)

// Options configure `flotilla hub`.
type Options struct {
	// DataDir holds the embedded hub's PKI, etcd data, logs and admin.kubeconfig.
	DataDir string
	// Kubeconfig, when set, uses an existing cluster as the hub instead of the embedded control plane.
	Kubeconfig string
	// Context is the kubeconfig context to use with Kubeconfig.
	Context string
	// AllowWorkloads uses a Kubeconfig cluster even when it runs workloads (see CheckNoWorkloads).
	AllowWorkloads bool
	// RegisterHost, when set, registers the cluster of Kubeconfig as a Push member of this name.
	RegisterHost string
	// BindAddress and SecurePort are where the embedded kube-apiserver listens.
	BindAddress string
	SecurePort  int
	// AdvertiseAddress is the address members and clients use to reach the hub.
	AdvertiseAddress string
	// TLSSANs are extra names for the serving certificate.
	TLSSANs []string
	// EtcdServers points the embedded kube-apiserver at an external etcd cluster.
	EtcdServers []string
	// EtcdPrefix is the hub's key prefix in etcd.
	EtcdPrefix string
	// EtcdTLS is the CA, client certificate and key kube-apiserver uses with EtcdServers.
	EtcdTLS controlplane.EtcdTLS
	// Controllers selects Flotilla's controllers: "*", "name", "-name".
	Controllers []string
	// RequireApproval makes pull joins wait for `flotilla accept`.
	RequireApproval bool
	// ClusterGracePeriod is how long a cluster may go without a heartbeat before it is Unknown.
	ClusterGracePeriod time.Duration
	// DefaultFailoverToleration is how long bindings tolerate a cluster's health NoExecute taints unless
	// their policy tolerates them itself.
	DefaultFailoverToleration time.Duration
	// DescheduleAfter is how long replicas divided by capacity may stay unschedulable in a cluster before
	// they move to clusters with room, unless their policy says otherwise; 0 never moves them.
	DescheduleAfter time.Duration
	// Failover says when an unhealthy cluster is tainted NoExecute.
	Failover clusterstatus.FailoverOptions
	// MaxAgentCertTTL is the longest lifetime of an agent certificate: longer requests are denied, and the
	// embedded signer issues nothing longer.
	MaxAgentCertTTL time.Duration
	// Profiling serves /debug/pprof on the embedded API server's secure port (Config.Profiling).
	Profiling bool
	// Dashboard serves the dashboard at /dashboard/ on DashboardPort, an origin of its own. Off, the hub
	// neither serves it nor starts what it needs (its change informers, its ClusterRole and binding).
	Dashboard bool
	// DashboardPort is the embedded hub's dashboard port on BindAddress; 0 picks a free one.
	DashboardPort int
	// ProxySystemGroups are the system:* groups of a hub user that members see through the proxy (besides
	// system:authenticated, always); the others are dropped.
	ProxySystemGroups []string
	// FleetUserGroups may open the dashboard and ask for fleet lists (what either shows is still up to
	// each user's own rights).
	FleetUserGroups []string
	// Version is Flotilla's version, reported for Push clusters.
	Version string
	// ClusterCredentialGroups may change the fields of a Cluster that decide where the hub sends a member's
	// traffic and which agent it trusts (admission policy flotilla-cluster-credentials).
	ClusterCredentialGroups []string
	// AllowLocalMemberEndpoints admits Clusters whose endpoint is a loopback or link-local address.
	AllowLocalMemberEndpoints bool
	// AllowLocalChartRepositories lets HelmReleases fetch charts from the hub's own machine (loopback).
	AllowLocalChartRepositories bool
	// WebhookPort, WebhookHost and WebhookService (NAMESPACE/NAME) say, with Kubeconfig, where the hub serves
	// the admission checks that cluster's API server calls, and how it reaches them (admission.WebhookOptions).
	WebhookPort    int
	WebhookHost    string
	WebhookService string
	// MetricsPort is, with Kubeconfig, where on BindAddress the hub serves its metrics (/metrics) and probes
	// (/healthz, /readyz) over plain HTTP; 0 picks a free one. The embedded hub serves them on its API.
	MetricsPort int
	// ClusterSetMode, when set, is recorded as the hub's cluster-set mode at start (clusterset.RecordMode);
	// unset, the recorded mode stays, and a hub without a record gets RequireBindings (Open when upgraded).
	ClusterSetMode clusterset.Mode
	// Shard divides the per-cluster controllers' work among the hub's replicas (internal/shard); off, the
	// leader runs them all.
	Shard bool
	// ShardLeaseDuration is how long a replica's shard Lease lasts unrenewed: the longest its clusters wait
	// for another replica when it dies.
	ShardLeaseDuration time.Duration
	// KarmadaAPIs serves Karmada's policy.karmada.io, autoscaling.karmada.io and config.karmada.io kinds,
	// mirrored onto Flotilla's.
	KarmadaAPIs bool
	// OCMAPIs serves OCM's addon.open-cluster-management.io and cluster.open-cluster-management.io kinds and
	// ManifestWork, mirrored onto Flotilla's add-on, cluster set, placement and Work kinds.
	OCMAPIs bool
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		BindAddress:               "0.0.0.0",
		SecurePort:                6443,
		EtcdPrefix:                "/registry",
		Controllers:               []string{"*"},
		ClusterGracePeriod:        40 * time.Second,
		DefaultFailoverToleration: scheduler.DefaultFailoverToleration,
		DescheduleAfter:           scheduler.DefaultDescheduleAfter,
		Failover: clusterstatus.FailoverOptions{
			UnhealthyThreshold: clusterstatus.DefaultUnhealthyThreshold,
			PerMinute:          clusterstatus.DefaultFailoverRate,
		},
		MaxAgentCertTTL:         30 * 24 * time.Hour,
		KarmadaAPIs:             true,
		OCMAPIs:                 true,
		Dashboard:               true,
		DashboardPort:           6444,
		FleetUserGroups:         []string{"flotilla:fleet-users"},
		ClusterCredentialGroups: []string{"system:masters"},
		ShardLeaseDuration:      15 * time.Second,
	}
}

// AddFlags binds the options to flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir, "directory for the embedded hub's PKI, etcd data, logs and admin.kubeconfig (default $HOME/.flotilla/hub)")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "use the cluster of this kubeconfig as the hub: install the CRDs there and run only Flotilla's controllers")
	fs.StringVar(&o.Context, "context", o.Context, "kubeconfig context to use with --kubeconfig")
	fs.StringVar(&o.RegisterHost, "register-host", o.RegisterHost, "with --kubeconfig: also register that cluster as a member of this name, in push mode (templates then run there)")
	fs.BoolVar(&o.AllowWorkloads, "allow-workloads", o.AllowWorkloads, "use the cluster of --kubeconfig even though it has Nodes or a running kube-controller-manager: templates would run there as workloads")
	fs.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "IP address the hub API listens on (with --kubeconfig: its admission webhook)")
	fs.IntVar(&o.SecurePort, "secure-port", o.SecurePort, "port the hub API listens on")
	fs.StringVar(&o.AdvertiseAddress, "advertise-address", o.AdvertiseAddress, "IP address members and clients use to reach the hub (default 127.0.0.1)")
	fs.StringSliceVar(&o.TLSSANs, "tls-san", o.TLSSANs, "extra DNS name or IP for the hub's serving certificate (repeatable)")
	fs.StringSliceVar(&o.EtcdServers, "etcd-servers", o.EtcdServers, "external etcd cluster (comma-separated URLs) instead of the embedded etcd; hubs sharing one etcd must share the PKI in DIR/pki")
	fs.StringVar(&o.EtcdPrefix, "etcd-prefix", o.EtcdPrefix, "key prefix of the hub's objects in etcd")
	fs.StringVar(&o.EtcdTLS.CAFile, "etcd-cafile", o.EtcdTLS.CAFile, "CA that signed the certificates of --etcd-servers")
	fs.StringVar(&o.EtcdTLS.CertFile, "etcd-certfile", o.EtcdTLS.CertFile, "client certificate the hub presents to --etcd-servers")
	fs.StringVar(&o.EtcdTLS.KeyFile, "etcd-keyfile", o.EtcdTLS.KeyFile, "key of --etcd-certfile")
	fs.BoolVar(&o.RequireApproval, "require-approval", o.RequireApproval, "pull joins wait for flotilla accept NAME instead of being approved automatically")
	fs.DurationVar(&o.MaxAgentCertTTL, "max-agent-cert-ttl", o.MaxAgentCertTTL, "longest lifetime of an agent's hub certificate: the hub denies requests for longer ones")
	fs.DurationVar(&o.ClusterGracePeriod, "cluster-grace-period", o.ClusterGracePeriod, "how long a cluster may go without a heartbeat before it is Ready=Unknown and tainted unreachable; agents renew their Leases every quarter of it (at least every 10s)")
	fs.DurationVar(&o.DefaultFailoverToleration, "default-failover-toleration", o.DefaultFailoverToleration, "how long workloads stay on an unreachable or not-ready cluster before they fail over, unless their policy tolerates the cluster.flotilla.io/unreachable or not-ready NoExecute taint itself")
	fs.DurationVar(&o.DescheduleAfter, "deschedule-after", o.DescheduleAfter, "how long replicas divided by capacity (Aggregated, or dynamicWeight AvailableReplicas) may stay unschedulable in a cluster before they move to clusters with room, unless their policy sets replicaScheduling.descheduleAfter; 0 never moves them")
	fs.Float64Var(&o.Failover.UnhealthyThreshold, "unhealthy-fleet-threshold", o.Failover.UnhealthyThreshold, "share of clusters (0-1) that may be unreachable at once: above it the hub assumes it is the one cut off and fails nothing over")
	fs.Float64Var(&o.Failover.PerMinute, "failover-rate", o.Failover.PerMinute, "clusters per minute that may be tainted NoExecute for failing health")
	fs.BoolVar(&o.Profiling, "profiling", o.Profiling, "serve Go's profiles of the hub process at /debug/pprof on the secure port, to users allowed that non-resource URL (the hub admin): for measuring the hub, off otherwise")
	fs.BoolVar(&o.Dashboard, "dashboard", o.Dashboard, "serve the dashboard at /dashboard/ on --dashboard-port (embedded hub only); false: no dashboard, and none of its watches or RBAC objects")
	fs.IntVar(&o.DashboardPort, "dashboard-port", o.DashboardPort, "port of the dashboard, an origin of its own apart from the hub API's (0: a free port, printed at start)")
	fs.StringSliceVar(&o.ProxySystemGroups, "proxy-system-groups", o.ProxySystemGroups, "system:* groups of a hub user that members see when the proxy acts as that user (system:authenticated always); others, such as system:masters and system:serviceaccounts:NS, mean something on the hub only and are dropped. flotilla up passes system:masters: its hub admin is every member's admin")
	fs.StringSliceVar(&o.FleetUserGroups, "fleet-user-groups", o.FleetUserGroups, "groups that may open the dashboard and ask for fleet lists (each still sees only what its own rights allow); system:authenticated would include join tokens and agents")
	fs.StringSliceVar(&o.ClusterCredentialGroups, "cluster-credential-groups", o.ClusterCredentialGroups, "groups that may set or change a Cluster's endpoint, proxy, TLS check, Secret, ID and agent annotations (with the hub's own controllers); anyone else who may patch Clusters changes only labels, taints and the rest")
	fs.IntVar(&o.WebhookPort, "webhook-port", o.WebhookPort, "with --kubeconfig: port of the admission webhook the hub serves to that cluster's API server, on --bind-address (0: a free port)")
	fs.StringVar(&o.WebhookHost, "webhook-host", o.WebhookHost, "with --kubeconfig: name or IP at which that cluster's API server reaches the hub's admission webhook (default: this host's address on its route to that API server)")
	fs.StringVar(&o.WebhookService, "webhook-service", o.WebhookService, "with --kubeconfig, for a hub running inside that cluster: NAMESPACE/NAME of the Service in front of it, through which the API server reaches the admission webhook at --webhook-port")
	fs.IntVar(&o.MetricsPort, "metrics-port", o.MetricsPort, "with --kubeconfig: port on --bind-address where the hub serves its metrics at /metrics and its probes at /healthz and /readyz, plain HTTP without authentication (0: a free port, printed at start); the embedded hub serves its metrics on its API at /metrics")
	fs.BoolVar(&o.AllowLocalChartRepositories, "allow-local-chart-repositories", o.AllowLocalChartRepositories, "let HelmReleases fetch charts from repositories on the hub's own machine (loopback addresses; a local fleet, such as flotilla up's); link-local addresses, where cloud metadata endpoints live, are refused whatever this says")
	fs.BoolVar(&o.AllowLocalMemberEndpoints, "allow-local-member-endpoints", o.AllowLocalMemberEndpoints, "admit Clusters whose endpoint is a loopback or link-local address (a local fleet, such as flotilla up's); off, such endpoints are refused at admission")
	fs.StringVar((*string)(&o.ClusterSetMode), "clusterset-mode", string(o.ClusterSetMode), fmt.Sprintf("where a namespace without a ClusterSetBinding may place, recorded in ConfigMap %s/%s: %s (nowhere) or %s (any cluster); unset, the recorded mode stays, and a new hub records %s (a hub upgraded from before cluster sets: %s)", clusterv1alpha1.SystemNamespace, clusterset.ModeConfigMap, clusterset.RequireBindings, clusterset.Open, clusterset.RequireBindings, clusterset.Open))
	fs.BoolVar(&o.Shard, "shard", o.Shard, "divide cluster health, push execution and Work rendering among the hub's replicas (several hubs on one --etcd-servers, or on one --kubeconfig cluster) by a hash of the cluster's name; off, the elected leader runs them for every cluster")
	fs.DurationVar(&o.ShardLeaseDuration, "shard-lease-duration", o.ShardLeaseDuration, "with --shard: how long a replica's Lease lasts unrenewed (renewed every third of it); a replica that dies hands its clusters over within it")
	fs.BoolVar(&o.KarmadaAPIs, "karmada-apis", o.KarmadaAPIs, "serve Karmada's policy.karmada.io, autoscaling.karmada.io and config.karmada.io kinds (policies, override policies, FederatedResourceQuota, FederatedHPA, CronFederatedHPA, ResourceInterpreterCustomization, ResourceInterpreterWebhookConfiguration) unchanged, each mirrored onto its Flotilla twin; false installs none of their CRDs (and removes none already installed) and mirrors nothing")
	fs.BoolVar(&o.OCMAPIs, "ocm-apis", o.OCMAPIs, "serve OCM's addon.open-cluster-management.io kinds (ClusterManagementAddOn, ManagedClusterAddOn, AddOnTemplate, AddOnDeploymentConfig) and cluster.open-cluster-management.io kinds (ManagedClusterSet, ManagedClusterSetBinding, Placement, PlacementDecision) and work.open-cluster-management.io ManifestWork and ManifestWorkReplicaSet unchanged, each mirrored onto Flotilla's (AddOn, ClusterAddOn, AddOnConfig, ClusterSet, ClusterSetBinding, Placement, PlacementDecision, Work; a ManifestWorkReplicaSet writes one ManifestWork per decided cluster); false installs none of their CRDs (and removes none already installed) and mirrors nothing")
	fs.StringSliceVar(&o.Controllers, "controllers", o.Controllers, fmt.Sprintf("controllers to run: '*' for all, 'name' to enable, '-name' to disable (known: %s)", strings.Join(Controllers.Names(), ", ")))
}

// Embedded reports whether the hub runs its own control plane.
func (o *Options) Embedded() bool { return o.Kubeconfig == "" }

// Validate checks every option and fills in derived defaults. It runs before anything starts.
func (o *Options) Validate() error {
	var errs []error
	if slices.Contains(o.FleetUserGroups, "") || slices.Contains(o.FleetUserGroups, "system:unauthenticated") {
		errs = append(errs, errors.New("--fleet-user-groups: no empty group, and not system:unauthenticated"))
	}
	for _, g := range o.ProxySystemGroups {
		if !strings.HasPrefix(g, "system:") {
			errs = append(errs, fmt.Errorf("--proxy-system-groups %q: not a system: group (other groups always pass)", g))
		}
	}
	if o.DashboardPort < 0 || o.DashboardPort > 65535 {
		errs = append(errs, fmt.Errorf("--dashboard-port %d: want 0 (a free port) to 65535", o.DashboardPort))
	}
	if len(o.ClusterCredentialGroups) == 0 || slices.Contains(o.ClusterCredentialGroups, "") {
		errs = append(errs, errors.New("--cluster-credential-groups: name at least one group, and no empty one (system:masters holds the embedded hub's admin)"))
	}
	if o.Embedded() {
		if o.AllowWorkloads || o.RegisterHost != "" {
			errs = append(errs, errors.New("--allow-workloads and --register-host apply only to --kubeconfig"))
		}
		if o.WebhookPort != 0 || o.WebhookHost != "" || o.WebhookService != "" {
			errs = append(errs, errors.New("--webhook-port, --webhook-host and --webhook-service apply only to --kubeconfig: the embedded hub's API server runs the admission checks itself"))
		}
		if o.MetricsPort != 0 {
			errs = append(errs, errors.New("--metrics-port applies only to --kubeconfig: the embedded hub serves its metrics on its API at /metrics, and its probes at /healthz and /readyz"))
		}
		if o.DataDir == "" {
			dir, err := DefaultDataDir()
			if err != nil {
				return err
			}
			o.DataDir = dir
		}
		if o.SecurePort < 1 || o.SecurePort > 65535 {
			errs = append(errs, fmt.Errorf("--secure-port %d: must be between 1 and 65535", o.SecurePort))
		}
		if o.AdvertiseAddress != "" && net.ParseIP(o.AdvertiseAddress) == nil {
			errs = append(errs, fmt.Errorf("--advertise-address %q: not an IP address", o.AdvertiseAddress))
		}
		for _, san := range o.TLSSANs {
			if strings.TrimSpace(san) == "" || (strings.ContainsAny(san, " /:") && net.ParseIP(san) == nil) {
				errs = append(errs, fmt.Errorf("--tls-san %q: not a DNS name or IP address", san))
			}
		}
		errs = append(errs, controlplane.ValidateEtcdFlags(o.EtcdServers, o.EtcdPrefix)...)
		errs = append(errs, controlplane.ValidateEtcdTLSFlags(o.EtcdServers, o.EtcdTLS)...)
	} else {
		if o.DataDir != "" || len(o.EtcdServers) > 0 || o.EtcdTLS != (controlplane.EtcdTLS{}) || len(o.TLSSANs) > 0 || o.AdvertiseAddress != "" {
			errs = append(errs, errors.New("--data-dir, --etcd-servers, --etcd-cafile, --etcd-certfile, --etcd-keyfile, --tls-san and --advertise-address configure the embedded hub and cannot be used with --kubeconfig"))
		}
		if o.Profiling {
			errs = append(errs, errors.New("--profiling serves the embedded hub's profiles and cannot be used with --kubeconfig: profile that cluster's API server as its administrator allows"))
		}
		if _, err := os.Stat(o.Kubeconfig); err != nil {
			errs = append(errs, fmt.Errorf("--kubeconfig: %w", err))
		}
		errs = append(errs, o.validateWebhook()...)
	}
	if net.ParseIP(o.BindAddress) == nil {
		errs = append(errs, fmt.Errorf("--bind-address %q: not an IP address", o.BindAddress))
	}
	if o.DescheduleAfter < 0 {
		errs = append(errs, fmt.Errorf("--deschedule-after %s: must not be negative (0 never moves unschedulable replicas)", o.DescheduleAfter))
	}
	if o.DefaultFailoverToleration < 0 {
		errs = append(errs, fmt.Errorf("--default-failover-toleration %s: must not be negative", o.DefaultFailoverToleration))
	}
	if !(o.Failover.UnhealthyThreshold > 0 && o.Failover.UnhealthyThreshold <= 1) {
		errs = append(errs, fmt.Errorf("--unhealthy-fleet-threshold %g: must be a share above 0 and at most 1", o.Failover.UnhealthyThreshold))
	}
	if !(o.Failover.PerMinute > 0) || math.IsInf(o.Failover.PerMinute, 0) {
		errs = append(errs, fmt.Errorf("--failover-rate %g: must be a number of clusters per minute above 0", o.Failover.PerMinute))
	}
	if o.ClusterGracePeriod < clusterstatus.MinGracePeriod {
		errs = append(errs, fmt.Errorf("--cluster-grace-period %s: must be at least %s (two heartbeats)", o.ClusterGracePeriod, clusterstatus.MinGracePeriod))
	}
	if o.MaxAgentCertTTL < 10*time.Minute {
		errs = append(errs, fmt.Errorf("--max-agent-cert-ttl %s: must be at least 10m (the shortest certificate the signer issues)", o.MaxAgentCertTTL))
	}
	if _, err := Controllers.Select(o.Controllers); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, o.validateShard()...)
	if o.ClusterSetMode != "" {
		if err := o.ClusterSetMode.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("--clusterset-mode: %w", err))
		}
	}
	return errors.Join(errs...)
}

// validateShard checks the shard group's flags.
func (o *Options) validateShard() []error {
	if !o.Shard {
		return nil
	}
	var errs []error
	if o.Embedded() && len(o.EtcdServers) == 0 {
		errs = append(errs, errors.New("--shard divides the work among replicas: it needs --etcd-servers or --kubeconfig, which replicas share (the embedded etcd serves one hub process)"))
	}
	if o.ShardLeaseDuration < shard.MinLeaseDuration || o.ShardLeaseDuration > 5*time.Minute {
		errs = append(errs, fmt.Errorf("--shard-lease-duration %s: want %s to 5m", o.ShardLeaseDuration, shard.MinLeaseDuration))
	}
	return errs
}

// validateWebhook checks where the hub over an existing cluster serves its admission webhook and its metrics.
func (o *Options) validateWebhook() []error {
	var errs []error
	if o.WebhookPort < 0 || o.WebhookPort > 65535 {
		errs = append(errs, fmt.Errorf("--webhook-port %d: want 0 (a free port) to 65535", o.WebhookPort))
	}
	if o.MetricsPort < 0 || o.MetricsPort > 65535 {
		errs = append(errs, fmt.Errorf("--metrics-port %d: want 0 (a free port) to 65535", o.MetricsPort))
	} else if o.MetricsPort != 0 && o.MetricsPort == o.WebhookPort {
		errs = append(errs, fmt.Errorf("--metrics-port %d: --webhook-port serves there already", o.MetricsPort))
	}
	if o.WebhookHost != "" && (strings.ContainsAny(o.WebhookHost, " /:") && net.ParseIP(o.WebhookHost) == nil) {
		errs = append(errs, fmt.Errorf("--webhook-host %q: not a DNS name or IP address", o.WebhookHost))
	}
	if o.WebhookService == "" {
		return errs
	}
	ns, name, _ := strings.Cut(o.WebhookService, "/")
	if len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Label(name)) > 0 {
		errs = append(errs, fmt.Errorf("--webhook-service %q: want NAMESPACE/NAME of a Service", o.WebhookService))
	}
	if o.WebhookHost != "" {
		errs = append(errs, errors.New("--webhook-host and --webhook-service are exclusive: the API server reaches the webhook at one or through the other"))
	}
	if o.WebhookPort == 0 {
		errs = append(errs, errors.New("--webhook-service needs --webhook-port: the port the Service forwards to the hub"))
	}
	return errs
}

// webhookOptions is where the hub over an existing cluster serves its admission webhook.
func (o *Options) webhookOptions() admission.WebhookOptions {
	w := admission.WebhookOptions{BindAddress: o.BindAddress, Port: o.WebhookPort, Host: o.WebhookHost}
	if ns, name, ok := strings.Cut(o.WebhookService, "/"); ok {
		w.Service = types.NamespacedName{Namespace: ns, Name: name}
	}
	return w
}

// DefaultDataDir is the embedded hub's data directory when --data-dir is not given: $HOME/.flotilla/hub.
func DefaultDataDir() (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("--data-dir is required: %w", err)
	}
	return filepath.Join(home, ".flotilla", "hub"), nil
}
