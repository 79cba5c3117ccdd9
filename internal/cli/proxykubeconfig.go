package cli

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	proxyv1alpha1 "github.com/flotilla-io/flotilla/api/proxy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/cli/cmdutil"
	"github.com/flotilla-io/flotilla/internal/registration"
)

// proxyKubeconfigOptions configure `flotilla kubeconfig` and `flotilla kubectl`.
type proxyKubeconfigOptions struct {
	hub cmdutil.HubFlags
	out string
}

func newKubeconfigCommand() *cobra.Command {
	o := &proxyKubeconfigOptions{}
	cmd := &cobra.Command{
		Use:   "kubeconfig CLUSTER",
		Short: "Print a kubeconfig that reaches a member cluster through the hub, as you",
		Long: `Print (or write with --out) a kubeconfig whose server is the hub's proxy to CLUSTER and whose
credentials are yours on the hub (from --kubeconfig and --context). Any Kubernetes client then works
against the member through the hub: the hub's RBAC on clusters/proxy decides whether you reach CLUSTER,
the member's RBAC what you may do there, as the same user and groups.`,
		Example: `  flotilla kubeconfig member1 --out member1.kubeconfig
  kubectl --kubeconfig member1.kubeconfig get pods -A`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			kubeconfig, err := o.kubeconfig(args[0])
			if err != nil {
				return err
			}
			data, err := clientcmd.Write(*kubeconfig)
			if err != nil {
				return err
			}
			if o.out == "" {
				_, err = cmd.OutOrStdout().Write(data)
				return err
			}
			// It may hold the caller's hub credentials.
			return os.WriteFile(o.out, data, 0o600)
		},
	}
	o.hub.AddFlags(cmd.Flags())
	cmd.Flags().StringVar(&o.out, "out", "", "write the kubeconfig to this file (mode 0600) instead of printing it")
	return cmd
}

func newKubectlCommand() *cobra.Command {
	o := &proxyKubeconfigOptions{}
	cmd := &cobra.Command{
		Use:   "kubectl CLUSTER -- ARGS...",
		Short: "Run kubectl against a member cluster through the hub, as you",
		Long: `Run kubectl (from PATH) with ARGS against CLUSTER through the hub's proxy, with the kubeconfig
flotilla kubeconfig CLUSTER prints.`,
		Example: `  flotilla kubectl member1 -- get pods -A`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			kubectl, err := exec.LookPath("kubectl")
			if err != nil {
				return fmt.Errorf("kubectl is not on PATH: install it, or use any other client with the kubeconfig of flotilla kubeconfig %s", args[0])
			}
			kubeconfig, err := o.kubeconfig(args[0])
			if err != nil {
				return err
			}
			dir, err := os.MkdirTemp("", "flotilla-kubectl-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			path := filepath.Join(dir, "kubeconfig")
			if err := clientcmd.WriteToFile(*kubeconfig, path); err != nil {
				return err
			}
			run := exec.CommandContext(cmd.Context(), kubectl, append([]string{"--kubeconfig", path}, args[1:]...)...)
			run.Stdin, run.Stdout, run.Stderr = cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()
			// kubectl has printed its error: its exit code is flotilla's, as if kubectl had been run alone.
			err = run.Run()
			var exit *exec.ExitError
			if errors.As(err, &exit) && exit.ExitCode() > 0 {
				return cmdutil.ExitCode(exit.ExitCode())
			}
			return err
		},
	}
	o.hub.AddFlags(cmd.Flags())
	return cmd
}

// kubeconfig is the caller's hub context alone, its files embedded, with the server moved to the proxy path
// of cluster.
func (o *proxyKubeconfigOptions) kubeconfig(cluster string) (*clientcmdapi.Config, error) {
	return proxyKubeconfig(&o.hub, cluster)
}

// proxyKubeconfig is the context of hub alone, its files embedded, with the server moved to the proxy path
// of cluster: a kubeconfig that reaches the member as the caller.
func proxyKubeconfig(hub *cmdutil.HubFlags, cluster string) (*clientcmdapi.Config, error) {
	if err := registration.ValidateClusterName(cluster); err != nil {
		return nil, fmt.Errorf("cluster %q: %w", cluster, err)
	}
	raw, err := hub.RawConfig()
	if err != nil {
		return nil, err
	}
	overrides := hub.Overrides
	if overrides.CurrentContext != "" {
		raw.CurrentContext = overrides.CurrentContext
	}
	hubContext, ok := raw.Contexts[raw.CurrentContext]
	if !ok {
		return nil, errors.New("hub kubeconfig: no current context; name one with --context")
	}
	hubCluster, ok := raw.Clusters[hubContext.Cluster]
	if !ok {
		return nil, fmt.Errorf("hub kubeconfig: context %s names no known cluster", raw.CurrentContext)
	}
	user, ok := raw.AuthInfos[hubContext.AuthInfo]
	if !ok {
		return nil, fmt.Errorf("hub kubeconfig: context %s names no known user", raw.CurrentContext)
	}
	server, err := url.Parse(hubCluster.Server)
	if err != nil {
		return nil, fmt.Errorf("hub kubeconfig: server %q: %w", hubCluster.Server, err)
	}
	server.Path = strings.TrimSuffix(server.Path, "/") + proxyv1alpha1.ClusterProxyPath(cluster)

	name := "flotilla-" + cluster
	target := hubCluster.DeepCopy()
	target.Server = server.String()
	// --as, --as-group and --as-uid go into the kubeconfig: its requests impersonate on the hub as this
	// command would, and the proxy acts in the member as the user they impersonate.
	user = user.DeepCopy()
	if overrides.AuthInfo.Impersonate != "" {
		user.Impersonate = overrides.AuthInfo.Impersonate
		user.ImpersonateGroups = overrides.AuthInfo.ImpersonateGroups
		user.ImpersonateUID = overrides.AuthInfo.ImpersonateUID
	}
	out := &clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{name: target},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{name: user},
		Contexts:       map[string]*clientcmdapi.Context{name: {Cluster: name, AuthInfo: name, Namespace: hubContext.Namespace}},
		CurrentContext: name,
	}
	// Certificates and keys named by path are read now: the kubeconfig works from any directory.
	if err := clientcmdapi.FlattenConfig(out); err != nil {
		return nil, fmt.Errorf("hub kubeconfig: %w", err)
	}
	return out, nil
}
