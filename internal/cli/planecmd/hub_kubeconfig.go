package planecmd

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/flotilla-io/flotilla/internal/cli/cmdutil"
	"github.com/flotilla-io/flotilla/internal/controlplane"
	"github.com/flotilla-io/flotilla/internal/hub"
)

// hubKubeconfigOptions configure `flotilla hub kubeconfig`.
type hubKubeconfigOptions struct {
	dataDir, server string
}

func (o *hubKubeconfigOptions) validate() error {
	if o.server != "" {
		if err := cmdutil.ValidateHubURL(o.server); err != nil {
			return fmt.Errorf("--server %w", err)
		}
	}
	if o.dataDir == "" {
		dir, err := hub.DefaultDataDir()
		if err != nil {
			return err
		}
		o.dataDir = dir
	}
	return nil
}

// newHubKubeconfigCommand prints the embedded hub's admin kubeconfig, so it can be read from a hub's pod
// whose image has nothing but flotilla in it (no shell, no cat for kubectl exec, no tar for kubectl cp).
func newHubKubeconfigCommand() *cobra.Command {
	o := &hubKubeconfigOptions{}
	cmd := &cobra.Command{
		Use:   "kubeconfig",
		Short: "Print the embedded hub's admin kubeconfig, optionally with another server address",
		Long: `Print the cluster-admin kubeconfig the embedded hub wrote to DATA_DIR/admin.kubeconfig.

Its server is the address the hub listens on, which is seldom the one to use elsewhere: --server replaces it,
for example with the hub Service's DNS name, once the hub's serving certificate is checked to name that host
(the hub's --tls-san; the chart's extraTLSSANs). The kubeconfig holds the hub's admin credential: keep it as
you would a cluster-admin's.`,
		Example: `  kubectl -n flotilla exec hub-0 -- flotilla hub kubeconfig --data-dir /var/lib/flotilla \
    --server https://hub.flotilla.svc:6443 > hub.kubeconfig`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			cfg, err := controlplane.ReadAdminKubeconfig(o.dataDir, o.server)
			if err != nil {
				return err
			}
			data, err := clientcmd.Write(*cfg)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(data)
			return err
		},
	}
	cmd.Flags().StringVar(&o.dataDir, "data-dir", "", "data directory of the hub (its --data-dir; default $HOME/.flotilla/hub)")
	cmd.Flags().StringVar(&o.server, "server", "", "server address to put in the kubeconfig, https://HOST:PORT (default: the one the hub wrote)")
	return cmd
}
