package planecmd

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/flotilla-io/flotilla/internal/cli/cmdutil"
	"github.com/flotilla-io/flotilla/internal/controlplane"
	"github.com/flotilla-io/flotilla/internal/devenv"
	"github.com/flotilla-io/flotilla/internal/logging"
)

func newDevCommand(verbosity *int) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Local clusters for trying Flotilla, tests and benchmarks",
	}
	cmd.AddCommand(newDevMemberCommand(verbosity), newDevEtcdCommand(verbosity))
	return cmd
}

func newDevMemberCommand(verbosity *int) *cobra.Command {
	o := devenv.NewMemberOptions()
	cmd := &cobra.Command{
		Use:   "member",
		Short: "Run a local member cluster: a real control plane with simulated nodes, in this process",
		Long: `Run a local member cluster in this process: etcd, kube-apiserver, kube-controller-manager with
its default controllers and kube-scheduler, with nodes simulated by kwok. Pods bound to the nodes go
Running and Ready with pod IPs, so Deployments become Available.

DATA_DIR/kubeconfig is written once a Deployment can become Available. Restarting with the same
--data-dir keeps every object.`,
		Example: `  flotilla dev member --name m1 --data-dir /tmp/m1
  kubectl --kubeconfig /tmp/m1/kubeconfig create deployment web --image=nginx --replicas=5`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, _ := os.UserHomeDir()
			if err := o.Validate(home); err != nil {
				return err
			}
			logFile := filepath.Join(o.DataDir, "member.log")
			if err := prepareLogs(o.DataDir, logFile, *verbosity); err != nil {
				return err
			}
			ctx, cancel := cmdutil.SignalContext()
			defer cancel()
			p := cmdutil.NewProgress(cmd.OutOrStdout())
			p.Step(fmt.Sprintf("starting member %s in %s (component logs: %s)", o.Name, o.DataDir, logFile))
			m, err := devenv.StartMember(ctx, o, p.Step)
			if err != nil {
				return err
			}
			p.Step(fmt.Sprintf("member %s ready at %s: export KUBECONFIG=%s", o.Name, m.URL, m.Kubeconfig))
			select {
			case <-ctx.Done():
			case err = <-m.Failed():
			}
			m.Stop()
			p.Step("member stopped")
			return err
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

func newDevEtcdCommand(verbosity *int) *cobra.Command {
	var dataDir string
	var port int
	cmd := &cobra.Command{
		Use:   "etcd",
		Short: "Run a local single-member etcd that hubs and members can share (--etcd-servers)",
		Example: `  flotilla dev etcd --data-dir /tmp/etcd --port 2379
  flotilla dev member --name m1 --etcd-servers http://127.0.0.1:2379`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dataDir == "" {
				return errors.New("--data-dir is required")
			}
			if port < 1 || port > 65535 {
				return fmt.Errorf("--port %d: must be between 1 and 65535", port)
			}
			if err := prepareLogs(dataDir, "", *verbosity); err != nil {
				return err
			}
			peer, err := controlplane.FreePorts(1)
			if err != nil {
				return err
			}
			ctx, cancel := cmdutil.SignalContext()
			defer cancel()
			p := cmdutil.NewProgress(cmd.OutOrStdout())
			e, err := controlplane.StartEtcd(controlplane.EtcdConfig{
				Name: "default", Dir: filepath.Join(dataDir, "etcd"),
				ClientURL: "http://127.0.0.1:" + strconv.Itoa(port),
				PeerURL:   "http://127.0.0.1:" + strconv.Itoa(peer[0]),
				LogFile:   filepath.Join(dataDir, "etcd.log"),
			})
			if err != nil {
				return err
			}
			p.Step("etcd ready: --etcd-servers " + e.ClientURL)
			<-ctx.Done()
			e.Close()
			p.Step("etcd stopped")
			return nil
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "directory for etcd's data and log")
	cmd.Flags().IntVar(&port, "port", 2379, "client port on 127.0.0.1")
	return cmd
}

// prepareLogs creates dir and sends the embedded components' logs to logFile (stderr when empty).
func prepareLogs(dir, logFile string, verbosity int) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return logging.Setup(verbosity, logFile)
}
