package planecmd

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/flotilla-io/flotilla/internal/cli/agentcmd"
	"github.com/flotilla-io/flotilla/internal/cli/cmdutil"
	"github.com/flotilla-io/flotilla/internal/hub"
	"github.com/flotilla-io/flotilla/internal/logging"
)

func newHubCommand(verbosity *int) *cobra.Command {
	o := hub.NewOptions()
	var logFormat logging.Format
	cmd := &cobra.Command{
		Use:   "hub",
		Short: "Run the Flotilla hub: an embedded Kubernetes API with Flotilla's APIs and controllers",
		Long: `Run the Flotilla hub.

By default the hub is a whole control plane in this process: etcd, kube-apiserver and the few core
controllers a store of templates needs, with its PKI and data in --data-dir. etcd listens on loopback
and answers only client certificates of its own CA; Secrets and Works are encrypted in it with the key
in DATA_DIR/pki/encryption.key. It writes DATA_DIR/admin.kubeconfig once the API serves every Flotilla
kind.

With --kubeconfig the hub uses an existing cluster instead: it installs the CRDs there and runs only
Flotilla's controllers. With --etcd-servers several hubs share one etcd (--etcd-cafile,
--etcd-certfile and --etcd-keyfile for TLS); all serve the API and one leads the controllers.`,
		Example: `  flotilla hub --data-dir /tmp/hub
  kubectl --kubeconfig /tmp/hub/admin.kubeconfig get crd`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Version = agentcmd.Version
			if err := o.Validate(); err != nil {
				return err
			}
			logFile := ""
			if o.Embedded() {
				logFile = filepath.Join(o.DataDir, "hub.log")
				if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
					return err
				}
			}
			if err := logging.SetupFormat(*verbosity, logFile, logFormat); err != nil {
				return err
			}
			if os.Getenv("GOGC") == "" {
				// Half the default heap headroom: the idle hub holds ~140 MB of live heap, and with the
				// default the heap grows to twice that before a collection. This keeps it under 400 MB RSS
				// with a few members for a few percent more CPU under load. GOGC overrides it.
				debug.SetGCPercent(50)
			}
			ctx, cancel := cmdutil.SignalContext()
			defer cancel()
			p := cmdutil.NewProgress(cmd.OutOrStdout())
			if logFile != "" {
				p.Step("starting the hub in " + o.DataDir + " (component logs: " + logFile + ")")
			}
			h, err := hub.Start(ctx, o, p.Step)
			if err != nil {
				return err
			}
			if h.AdminKubeconfig != "" {
				p.Step(fmt.Sprintf("hub ready: export KUBECONFIG=%s", h.AdminKubeconfig))
			} else {
				p.Step("hub ready on the cluster of " + o.Kubeconfig)
			}
			err = h.Run(ctx)
			p.Step("hub stopped")
			return err
		},
	}
	o.AddFlags(cmd.Flags())
	logging.AddFormatFlag(cmd.Flags(), &logFormat)
	cmd.AddCommand(newHubSnapshotCommand(), newHubKubeconfigCommand())
	return cmd
}
