package planecmd

import (
	"context"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/spf13/cobra"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/cli"
	"github.com/flotilla-io/flotilla/internal/cli/cmdutil"
	"github.com/flotilla-io/flotilla/internal/devenv"
)

func newUpCommand() *cobra.Command {
	o := &devenv.UpOptions{Members: 3, HubPort: 6443}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Run a local fleet: a hub and member clusters, joined and Ready, until Ctrl-C",
		Long: `Run a local fleet: a hub and --members member clusters (real control planes with simulated
nodes), each a child process of this command. By default (--mode mixed) member1 and member2 join
through agents (pull) and every third member in push mode. Members get a region and zone each in turn:
eu-west-1 (zones a and b), us-east-1, ap-south-1. Writes DATA_DIR/hub.kubeconfig and
DATA_DIR/members/NAME.kubeconfig, then stays in the foreground until Ctrl-C. Running it again on the
same --data-dir brings the same fleet back with everything in it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, _ := os.UserHomeDir()
			if err := o.Validate(home); err != nil {
				return err
			}
			ctx, cancel := cmdutil.SignalContext()
			defer cancel()
			p := cmdutil.NewProgress(cmd.OutOrStdout())
			p.Step(fmt.Sprintf("starting a hub and %d members in %s", o.Members, o.DataDir))
			env, err := devenv.Up(ctx, o, p.Step)
			if err != nil {
				return err
			}
			defer func() {
				p.Step("stopping the fleet")
				env.Stop()
				p.Step("stopped")
			}()
			clusters := &clusterv1alpha1.ClusterList{}
			if err := env.Hub.List(ctx, clusters); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintln(out)
			if err := cli.PrintClusterTable(ctx, out, env.Hub, clusters.Items); err != nil {
				return err
			}
			names := make([]string, 0, len(env.MemberKubeconfigs))
			for name := range env.MemberKubeconfigs {
				names = append(names, name)
			}
			sort.Strings(names)
			fmt.Fprintf(out, "\nThe hub:    export KUBECONFIG=%s\n", env.HubKubeconfig)
			for _, name := range names {
				fmt.Fprintf(out, "%-11s kubectl --kubeconfig %s get pods -A\n", name+":", env.MemberKubeconfigs[name])
			}
			fmt.Fprintln(out, "\nTry:\n  kubectl apply -f examples/guestbook.yaml\n  flotilla get bindings\n  flotilla status deployment/guestbook -n guestbook\n\nCtrl-C stops the fleet; flotilla up starts it again as it was.")
			select {
			case <-ctx.Done():
				return nil
			case <-waitFailed(ctx, env):
				return fmt.Errorf("a process of the fleet stopped: %s", env.Failed().LogPath)
			}
		},
	}
	cmd.Flags().IntVar(&o.Members, "members", o.Members, "number of member clusters")
	cmd.Flags().StringVar(&o.DataDir, "data-dir", "", "directory for the whole fleet (default $HOME/.flotilla/up)")
	cmd.Flags().IntVar(&o.HubPort, "hub-port", o.HubPort, "port of the hub API on 127.0.0.1")
	cmd.Flags().StringVar(&o.Mode, "mode", devenv.ModeMixed, "how members join: pull, push or mixed (every third push)")
	cmd.Flags().StringVar((*string)(&o.ClusterSetMode), "clusterset-mode", "", "where a namespace without a ClusterSetBinding may place: RequireBindings (nowhere) or Open (any cluster); unset, a new fleet is Open and a fleet started again keeps its hub's recorded mode")
	return cmd
}

// waitFailed closes when a process of the fleet exits on its own.
func waitFailed(ctx context.Context, env *devenv.Environment) <-chan struct{} {
	failed := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if env.Failed() != nil {
					close(failed)
					return
				}
			}
		}
	}()
	return failed
}
