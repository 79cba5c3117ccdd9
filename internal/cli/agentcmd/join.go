package agentcmd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"

	"github.com/flotilla-io/flotilla/internal/agent"
	"github.com/flotilla-io/flotilla/internal/cli/cmdutil"
	"github.com/flotilla-io/flotilla/internal/logging"
	"github.com/flotilla-io/flotilla/internal/registration"
)

// joinOptions configure `flotilla join`.
type joinOptions struct {
	mode, hubURL, token, tokenFile, clusterName string
	// tokenSecret, in the member, is the Secret of the agent's namespace the token came from (the chart's):
	// it is deleted once the agent's credential is stored.
	tokenSecret              string
	skipProxyCheck           bool
	caCertHashes             []string
	labels, provider, region string
	zones                    []string
	agent                    agent.Options
	hub                      cmdutil.HubFlags
	install                  installOptions
	dryRun                   cmdutil.DryRun
}

// tokenEnv holds the bootstrap token when neither --token nor --token-file is given: unlike a flag, it is
// not in the agent's command line, which every user of the member's machine can read for the agent's life.
const tokenEnv = "FLOTILLA_TOKEN"

func (o *joinOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.mode, "mode", "pull", "pull: run an agent beside the member; push: the hub reaches the member itself")
	fs.StringVar(&o.token, "token", "", "bootstrap token from flotilla token create (pull); prefer --token-file or $"+tokenEnv+", which stay out of the process list")
	fs.StringVar(&o.tokenFile, "token-file", "", "file holding the bootstrap token (pull)")
	fs.StringVar(&o.tokenSecret, "token-secret", "", "in the member (in-cluster): the Secret of the agent's namespace that holds the token, deleted once the agent's credential is stored (a spent token is nobody's business)")
	fs.StringSliceVar(&o.caCertHashes, "ca-cert-hash", nil, "pin of a hub CA certificate, sha256:<hex>, from flotilla token create (pull; repeatable: every certificate the hub presents must be pinned)")
	fs.BoolVar(&o.skipProxyCheck, "skip-proxy-check", false, "push: join even if the member credentials may not impersonate, which the hub's proxy to the cluster needs")
	fs.StringVar(&o.clusterName, "cluster-name", "", "name of the cluster on the hub (a DNS label of at most 46 characters)")
	fs.StringVar(&o.labels, "labels", "", "labels for the Cluster, k=v,k2=v2")
	fs.StringVar(&o.provider, "provider", "", "cloud or infrastructure provider of the cluster")
	fs.StringVar(&o.region, "region", "", "region of the cluster")
	fs.StringSliceVar(&o.zones, "zone", nil, "zone of the cluster (repeatable)")
	addAgentFlags(fs, &o.agent)
	o.hub.AddFlags(fs)
	if o.install.installer != nil {
		o.install.addFlags(fs)
		cmdutil.AddDryRunFlag(fs, &o.dryRun, "the objects --install would apply, as YAML,")
	}
}

func addAgentFlags(fs *pflag.FlagSet, o *agent.Options) {
	fs.StringVar(&o.ClusterKubeconfig, "cluster-kubeconfig", "", "kubeconfig of the member cluster (default: in-cluster)")
	fs.StringVar(&o.ClusterContext, "cluster-context", "", "context of --cluster-kubeconfig that reaches the member (default: its current context)")
	fs.StringVar(&o.DataDir, "agent-data-dir", "", "where the agent keeps its hub credential outside the member (default $HOME/.flotilla/agents/CLUSTER)")
	fs.StringVar(&o.CredentialSecret, "credential-secret", "flotilla-agent-credential", "in the member (in-cluster, no --cluster-kubeconfig): the Secret of the agent's namespace that keeps its hub credential")
	fs.DurationVar(&o.CertTTL, "cert-ttl", 7*24*time.Hour, "lifetime the agent asks for its hub certificate (at least 10m)")
	fs.DurationVar(&o.RenewBefore, "renew-before", 0, "renew the certificate this long before it expires (default: with a fifth of its life left)")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", "0", "HOST:PORT where the agent serves /healthz (alive, also while a join waits) and /readyz (joined and running with a current hub certificate), plain HTTP (the chart sets :8081); 0 serves none")
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", "0", "HOST:PORT where the agent serves its Prometheus metrics at /metrics, plain HTTP without authentication (e.g. 127.0.0.1:8080, or the pod's address); 0 serves none")
	_ = fs.MarkHidden("renew-before")
}

func validateAgentOptions(o *agent.Options, cluster string) error {
	if o.ClusterContext != "" && o.ClusterKubeconfig == "" {
		return errors.New("--cluster-context needs --cluster-kubeconfig: the kubeconfig the context is in")
	}
	if o.InCluster() {
		if o.DataDir != "" {
			return errors.New("--agent-data-dir: in the member the agent keeps its credential in --credential-secret")
		}
		if o.CredentialSecret == "" {
			return errors.New("--credential-secret is required in the member")
		}
	} else if o.DataDir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return fmt.Errorf("--agent-data-dir is required: %w", err)
		}
		o.DataDir = filepath.Join(home, ".flotilla", "agents", cluster)
	}
	if o.CertTTL < 10*time.Minute {
		return fmt.Errorf("--cert-ttl %s: must be at least 10m", o.CertTTL)
	}
	if o.RenewBefore < 0 || o.RenewBefore >= o.CertTTL {
		return fmt.Errorf("--renew-before %s: must be less than --cert-ttl %s", o.RenewBefore, o.CertTTL)
	}
	if o.HealthProbeBindAddress != "0" && o.HealthProbeBindAddress != "" {
		if _, port, err := net.SplitHostPort(o.HealthProbeBindAddress); err != nil || port == "" {
			return fmt.Errorf("--health-probe-bind-address %q: want HOST:PORT, or 0 for none", o.HealthProbeBindAddress)
		}
	}
	if o.MetricsBindAddress != "0" && o.MetricsBindAddress != "" {
		if _, port, err := net.SplitHostPort(o.MetricsBindAddress); err != nil || port == "" {
			return fmt.Errorf("--metrics-bind-address %q: want HOST:PORT, or 0 for none", o.MetricsBindAddress)
		}
	}
	return nil
}

func (o *joinOptions) validate(args []string) error {
	var errs []error
	if o.clusterName == "" {
		errs = append(errs, errors.New("--cluster-name is required"))
	} else if err := registration.ValidateClusterName(o.clusterName); err != nil {
		errs = append(errs, fmt.Errorf("--cluster-name: %w", err))
	}
	if _, err := labels.ConvertSelectorToLabelsMap(o.labels); err != nil {
		errs = append(errs, fmt.Errorf("--labels %q: %w", o.labels, err))
	}
	switch o.mode {
	case "pull":
		if len(args) != 1 {
			errs = append(errs, errors.New("pull mode needs the hub URL: flotilla join HUB_URL --token ... --ca-cert-hash ..."))
		} else if err := cmdutil.ValidateHubURL(args[0]); err != nil {
			errs = append(errs, fmt.Errorf("hub URL %w", err))
		} else {
			o.hubURL = args[0]
		}
		if err := o.readToken(); err != nil {
			errs = append(errs, err)
		}
		if len(o.caCertHashes) == 0 {
			errs = append(errs, errors.New("--ca-cert-hash is required: the pin of the hub's CA, from flotilla token create"))
		}
		for _, h := range o.caCertHashes {
			if err := registration.ValidateCAHash(h); err != nil {
				errs = append(errs, fmt.Errorf("%w, from flotilla token create", err))
			}
		}
		if err := validateAgentOptions(&o.agent, o.clusterName); err != nil {
			errs = append(errs, err)
		}
		if o.install.enabled && o.agent.ClusterKubeconfig == "" {
			errs = append(errs, errors.New("--install needs --cluster-kubeconfig: the member to install the agent into"))
		}
		if o.dryRun.Enabled() && !o.install.enabled {
			errs = append(errs, errors.New("--dry-run is for --install: it prints the objects the install would apply (a join without --install runs the agent here)"))
		}
	case "push":
		if len(args) > 0 || o.token != "" || o.tokenFile != "" || len(o.caCertHashes) > 0 {
			errs = append(errs, errors.New("push mode takes no hub URL, --token, --token-file or --ca-cert-hash: the hub is --kubeconfig"))
		}
		if o.agent.ClusterKubeconfig == "" {
			errs = append(errs, errors.New("push mode needs --cluster-kubeconfig: the hub stores it to reach the member"))
		}
		if o.dryRun.Enabled() {
			errs = append(errs, errors.New("--dry-run is for --install: it prints the objects the install would apply"))
		}
	default:
		errs = append(errs, fmt.Errorf("--mode %q: want pull or push", o.mode))
	}
	if o.skipProxyCheck && o.mode != "push" {
		errs = append(errs, errors.New("--skip-proxy-check is for push mode: a pull member's agent gives the proxy its way in"))
	}
	return errors.Join(errs...)
}

// readToken takes the bootstrap token from --token, --token-file or $FLOTILLA_TOKEN, at most one of them.
func (o *joinOptions) readToken() error {
	env := os.Getenv(tokenEnv)
	sources := 0
	for _, set := range []bool{o.token != "", o.tokenFile != "", env != ""} {
		if set {
			sources++
		}
	}
	switch {
	case sources > 1:
		return fmt.Errorf("give the token one way: --token, --token-file or $%s", tokenEnv)
	case o.tokenFile != "":
		data, err := os.ReadFile(o.tokenFile)
		if err != nil {
			return fmt.Errorf("--token-file: %w", err)
		}
		o.token = strings.TrimSpace(string(data))
	case env != "":
		o.token = strings.TrimSpace(env)
	case sources == 0 && o.tokenSecret != "":
		// The chart's agent after its first join: the Secret is gone, and a joined agent needs no token
		// (joining without one fails, saying so).
		return nil
	}
	if !bootstraputil.IsValidBootstrapToken(o.token) {
		return fmt.Errorf("the token (--token, --token-file or $%s): want a bootstrap token of the form abcdef.0123456789abcdef, from flotilla token create", tokenEnv)
	}
	return nil
}

// NewJoinCommand is flotilla join; installer, if not nil, adds --install.
func NewJoinCommand(verbosity *int, installer *Installer) *cobra.Command {
	o := &joinOptions{install: installOptions{installer: installer}}
	var logFormat logging.Format
	cmd := &cobra.Command{
		Use:   "join [HUB_URL]",
		Short: "Register a member cluster with the hub",
		Long: `Register a member cluster with the hub.

Pull (default): verify the hub's CA against --ca-cert-hash, join with the bootstrap token (from
--token-file, $FLOTILLA_TOKEN or --token), then run the agent in the foreground. Labels and location the
token does not allow are dropped unless an administrator accepts the join. A join for a name that is
already registered waits for flotilla accept on the hub. The agent keeps its hub credential in --agent-data-dir; restart it later with
flotilla agent, no token needed. An agent whose certificate expired recovers by running join again on the
same data directory with a new token: the hub keeps the cluster's registration once flotilla accept NAME
approves the new request.

With --install (flotilla only, not flotilla-agent), the agent runs in the member instead: the objects of the flotilla-agent chart (a
Deployment, its ServiceAccount and RBAC, the token in a Secret) are applied through --cluster-kubeconfig,
and the agent joins from there, keeping its credential in a Secret. flotilla unjoin --uninstall removes them.
--dry-run=client prints those objects as YAML without applying them; --dry-run=server prints them too, once
the member's API server has checked each (a server-side dry-run apply, nothing persisted).

Push: store the member's kubeconfig on the hub (--kubeconfig) and let the hub reach the member itself.`,
		Example: `  FLOTILLA_TOKEN=abcdef.0123456789abcdef flotilla join https://hub:6443 --ca-cert-hash sha256:... \
    --cluster-name m1 --cluster-kubeconfig /tmp/m1/kubeconfig --labels env=prod --region eu-west-1
  flotilla join https://hub.example.com:6443 --install --cluster-kubeconfig m2.kubeconfig --token-file token \
    --ca-cert-hash sha256:... --cluster-name m2
  flotilla join https://hub.example.com:6443 --install --dry-run=server --cluster-kubeconfig ~/.kube/config \
    --cluster-context m2 --token-file token --ca-cert-hash sha256:... --cluster-name m2
  flotilla join --mode push --cluster-name m3 --cluster-kubeconfig /tmp/m3/kubeconfig --kubeconfig hub.kubeconfig`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(args); err != nil {
				return err
			}
			if err := logging.SetupFormat(*verbosity, "", logFormat); err != nil {
				return err
			}
			ctx, cancel := cmdutil.SignalContext()
			defer cancel()
			p := cmdutil.NewProgress(cmd.OutOrStdout())
			memberConfig, err := o.agent.MemberConfig()
			if err != nil {
				return err
			}
			member, err := kubernetes.NewForConfig(memberConfig)
			if err != nil {
				return err
			}
			clusterID, err := registration.ClusterID(ctx, member)
			if err != nil {
				return err
			}
			if o.mode == "push" {
				return o.joinPush(cmd, member, clusterID, p)
			}
			if o.install.enabled {
				return o.installAgent(ctx, memberConfig, cmd.OutOrStdout(), cmd.ErrOrStderr(), p)
			}
			if o.agent.Health, err = agent.ServeHealth(ctx, o.agent.HealthProbeBindAddress); err != nil {
				return err
			} else if o.agent.Health != nil {
				p.Step("health probes served at http://" + o.agent.Health.Address + "/healthz and /readyz")
			}
			cred, err := o.agent.Credential(member)
			if err != nil {
				return err
			}
			joined, err := cred.Exists()
			if err != nil {
				return err
			}
			if joined {
				// An agent whose certificate expired (it was stopped too long, or could not reach the hub to
				// renew) joins again with the new token: the hub asks for flotilla accept, since the name is
				// registered, and then keeps the Cluster with everything placed on it.
				expired, notAfter, err := cred.Expired(time.Now())
				if err != nil {
					return err
				}
				if expired {
					p.Step(fmt.Sprintf("the hub certificate in %s expired at %s; joining again with the token (the hub keeps cluster %s once an administrator runs flotilla accept %s)",
						cred.Path, notAfter.Format(time.RFC3339), o.clusterName, o.clusterName))
					joined = false
				} else {
					p.Step("already joined (credential in " + cred.Path + "); starting the agent")
				}
			}
			if !joined {
				if o.token == "" {
					return fmt.Errorf("no bootstrap token (--token, --token-file or $%s): the agent has not joined yet, or its certificate expired; get one with flotilla token create --cluster-name %s", tokenEnv, o.clusterName)
				}
				err := registration.Join(ctx, registration.JoinRequest{
					HubURL: o.hubURL, Token: o.token, CACertHashes: o.caCertHashes, ClusterName: o.clusterName, ClusterID: clusterID,
					Labels: o.labels, Provider: o.provider, Region: o.region, Zones: o.zones, CertTTL: o.agent.CertTTL,
				}, cred, p.Step)
				if err != nil {
					return err
				}
				p.Step(fmt.Sprintf("cluster %s joined; hub credential in %s", o.clusterName, cred.Path))
			}
			if err := o.deleteTokenSecret(ctx, member, p); err != nil {
				return err
			}
			o.agent.Version = Version
			return agent.Run(ctx, &o.agent, p.Step)
		},
	}
	o.addFlags(cmd.Flags())
	logging.AddFormatFlag(cmd.Flags(), &logFormat)
	return cmd
}

func (o *joinOptions) joinPush(cmd *cobra.Command, member kubernetes.Interface, clusterID string, p *cmdutil.Progress) error {
	// The proxy needs impersonation rights on the member; without them every request through it would fail
	// with a 403 long after the join, so the join says so now.
	missing, err := registration.MissingImpersonation(cmd.Context(), member)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		err := registration.ImpersonationError(o.clusterName, missing)
		if !o.skipProxyCheck {
			return fmt.Errorf("%w; grant them, or join with --skip-proxy-check to go without the proxy to this cluster", err)
		}
		p.Step(fmt.Sprintf("warning: %v; the proxy to this cluster will not work", err))
	}
	_, hub, _, err := o.hub.Clients()
	if err != nil {
		return err
	}
	memberKubeconfig, err := clientcmd.LoadFromFile(o.agent.ClusterKubeconfig)
	if err != nil {
		return err
	}
	if ctx := o.agent.ClusterContext; ctx != "" {
		// The hub stores the kubeconfig flattened to its current context: the one asked for.
		if _, ok := memberKubeconfig.Contexts[ctx]; !ok {
			return fmt.Errorf("--cluster-context %q: no such context in %s", ctx, o.agent.ClusterKubeconfig)
		}
		memberKubeconfig.CurrentContext = ctx
	}
	lbls, _ := labels.ConvertSelectorToLabelsMap(o.labels)
	cluster, err := registration.JoinPush(cmd.Context(), hub, registration.PushRequest{
		ClusterName: o.clusterName, ClusterID: clusterID, Kubeconfig: memberKubeconfig,
		Labels: lbls, Provider: o.provider, Region: o.region, Zones: o.zones,
	})
	if err != nil {
		return err
	}
	p.Step(fmt.Sprintf("cluster %s joined in push mode (%s); the hub reports its status", cluster.Name, cluster.Spec.APIEndpoint))
	return nil
}

func NewAgentCommand(verbosity *int) *cobra.Command {
	o := &agent.Options{}
	var logFormat logging.Format
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run the agent of a member cluster that already joined",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.DataDir == "" && !o.InCluster() {
				return errors.New("--agent-data-dir is required: the directory flotilla join kept the credential in")
			}
			if err := validateAgentOptions(o, ""); err != nil {
				return err
			}
			if err := logging.SetupFormat(*verbosity, "", logFormat); err != nil {
				return err
			}
			ctx, cancel := cmdutil.SignalContext()
			defer cancel()
			o.Version = Version
			p := cmdutil.NewProgress(cmd.OutOrStdout())
			var err error
			if o.Health, err = agent.ServeHealth(ctx, o.HealthProbeBindAddress); err != nil {
				return err
			} else if o.Health != nil {
				p.Step("health probes served at http://" + o.Health.Address + "/healthz and /readyz")
			}
			return agent.Run(ctx, o, p.Step)
		},
	}
	addAgentFlags(cmd.Flags(), o)
	logging.AddFormatFlag(cmd.Flags(), &logFormat)
	return cmd
}

// deleteTokenSecret deletes --token-secret once the agent holds its credential: the token is spent (or, if
// reusable, still a key to the hub that nobody in the member needs).
func (o *joinOptions) deleteTokenSecret(ctx context.Context, member kubernetes.Interface, p *cmdutil.Progress) error {
	if o.tokenSecret == "" || !o.agent.InCluster() {
		return nil
	}
	namespace, err := agent.InClusterNamespace()
	if err != nil {
		return err
	}
	err = member.CoreV1().Secrets(namespace).Delete(ctx, o.tokenSecret, metav1.DeleteOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("deleting the token Secret %s/%s: %w", namespace, o.tokenSecret, err)
	}
	p.Step(fmt.Sprintf("deleted the bootstrap token's Secret %s/%s", namespace, o.tokenSecret))
	return nil
}
