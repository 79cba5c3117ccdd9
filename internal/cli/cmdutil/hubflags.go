package cmdutil

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/internal/scheme"
)

// HubFlags are kubectl's connection flags, for the hub: --kubeconfig, --context, --as, --as-group, --as-uid
// and --request-timeout, and -n/--namespace on the commands that add it, with kubectl's names, meanings and
// defaults (client-go's clientcmd flag definitions, which kubectl's are built on). A namespace not given is
// the kubeconfig context's, as in kubectl.
//
// cli-runtime's genericclioptions.ConfigFlags would say the same, but that package links kustomize and a
// disk cache of discovery, and these flags are the agent's too (join, unjoin): flotilla-agent stays small.
type HubFlags struct {
	// Kubeconfig is --kubeconfig: a path (empty: $KUBECONFIG or ~/.kube/config).
	Kubeconfig string
	// Overrides are --context, the impersonation flags, --request-timeout and --namespace.
	Overrides clientcmd.ConfigOverrides
}

// AddFlags adds the connection flags but --namespace.
func (f *HubFlags) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.Kubeconfig, "kubeconfig", "", "kubeconfig of the hub (default $KUBECONFIG or ~/.kube/config)")
	names := clientcmd.RecommendedConfigOverrideFlags("")
	names.CurrentContext.Description = "kubeconfig context of the hub"
	names.CurrentContext.BindStringFlag(fs, &f.Overrides.CurrentContext)
	names.AuthOverrideFlags.Impersonate.BindStringFlag(fs, &f.Overrides.AuthInfo.Impersonate)
	names.AuthOverrideFlags.ImpersonateUID.BindStringFlag(fs, &f.Overrides.AuthInfo.ImpersonateUID)
	names.AuthOverrideFlags.ImpersonateGroups.BindStringArrayFlag(fs, &f.Overrides.AuthInfo.ImpersonateGroups)
	names.Timeout.BindStringFlag(fs, &f.Overrides.Timeout)
}

// AddNamespaceFlag adds -n/--namespace; Namespace reads it, defaulting to the kubeconfig context's.
func (f *HubFlags) AddNamespaceFlag(fs *pflag.FlagSet, usage string) {
	fs.StringVarP(&f.Overrides.Context.Namespace, "namespace", "n", "", usage+" (default: the kubeconfig context's namespace)")
}

// ClientConfig is the hub's kubeconfig with the flags applied.
func (f *HubFlags) ClientConfig() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = f.Kubeconfig
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &f.Overrides)
}

// Namespace is --namespace when given, otherwise the namespace of the kubeconfig's context (in a pod without
// a kubeconfig, the pod's), otherwise default.
func (f *HubFlags) Namespace() (string, error) {
	if ns := f.Overrides.Context.Namespace; ns != "" {
		if bad := validation.IsDNS1123Label(ns); len(bad) > 0 {
			return "", fmt.Errorf("--namespace %q: %s", ns, strings.Join(bad, "; "))
		}
		return ns, nil
	}
	ns, _, err := f.ClientConfig().Namespace()
	if err != nil {
		return "", kubeconfigError(err)
	}
	return ns, nil
}

func (f *HubFlags) RestConfig() (*rest.Config, error) {
	if _, err := clientcmd.ParseTimeout(f.Overrides.Timeout); f.Overrides.Timeout != "" && err != nil {
		return nil, fmt.Errorf("--request-timeout %q: want a number of seconds or a duration such as 30s or 2m", f.Overrides.Timeout)
	}
	cfg, err := f.ClientConfig().ClientConfig()
	if err != nil {
		return nil, kubeconfigError(err)
	}
	// client-go's default of 5 requests a second, bursts of 10, throttles a command that reads a fleet of
	// thousands of clusters; kubectl allows 50, and bursts of 300 for discovery.
	cfg.QPS, cfg.Burst = ClientQPS, ClientBurst
	return cfg, nil
}

// RawConfig is the hub's kubeconfig as its files say, merged as kubectl merges them, without the flags applied;
// an error when there is none.
func (f *HubFlags) RawConfig() (clientcmdapi.Config, error) {
	raw, err := f.ClientConfig().RawConfig()
	if err == nil && len(raw.Clusters) == 0 && len(raw.Contexts) == 0 {
		err = clientcmd.ErrEmptyConfig
	}
	if err != nil {
		return clientcmdapi.Config{}, kubeconfigError(err)
	}
	return raw, nil
}

// ErrNoKubeconfig is the error of a command that needs the hub when no kubeconfig is given or found.
// client-go's own ("try setting KUBERNETES_MASTER") points nowhere a Flotilla user can go.
var ErrNoKubeconfig = errors.New("no kubeconfig of the hub: pass --kubeconfig (for the fleet of flotilla up, " +
	"--kubeconfig ~/.flotilla/up/hub.kubeconfig) or set KUBECONFIG; ~/.kube/config is read when neither is given")

func kubeconfigError(err error) error {
	if clientcmd.IsEmptyConfig(err) {
		return ErrNoKubeconfig
	}
	return fmt.Errorf("hub kubeconfig: %w", err)
}

// ClientQPS and ClientBurst are the client-side rate limit of the hub commands.
const (
	ClientQPS   = 50
	ClientBurst = 300
)

// Clients returns a controller-runtime client (every Flotilla kind) and a typed client for the hub.
func (f *HubFlags) Clients() (*rest.Config, client.Client, kubernetes.Interface, error) {
	cfg, err := f.RestConfig()
	if err != nil {
		return nil, nil, nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, nil, nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	return cfg, c, kube, nil
}
