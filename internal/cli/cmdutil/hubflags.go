package cmdutil

import (
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/internal/scheme"
)

// HubFlags are kubectl's --kubeconfig and --context, for the hub.
type HubFlags struct {
	// Kubeconfig and Context are the flags' values: a path (empty: the default rules) and a context name.
	Kubeconfig, Context string
}

func (f *HubFlags) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.Kubeconfig, "kubeconfig", "", "kubeconfig of the hub (default $KUBECONFIG or ~/.kube/config)")
	fs.StringVar(&f.Context, "context", "", "kubeconfig context of the hub")
}

func (f *HubFlags) clientConfig() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = f.Kubeconfig
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: f.Context})
}

// Namespace is the namespace of the kubeconfig context, as kubectl uses when -n is not given: default when
// the context names none.
func (f *HubFlags) Namespace() (string, error) {
	ns, _, err := f.clientConfig().Namespace()
	if err != nil {
		return "", fmt.Errorf("hub kubeconfig: %w", err)
	}
	return ns, nil
}

func (f *HubFlags) RestConfig() (*rest.Config, error) {
	cfg, err := f.clientConfig().ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("hub kubeconfig: %w", err)
	}
	return cfg, nil
}

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
