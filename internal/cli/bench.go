package cli

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/flotilla-io/flotilla/internal/bench"
	"github.com/flotilla-io/flotilla/internal/devenv"
)

func newBenchCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "bench", Short: "Benchmarks: each starts its own environment, measures and prints percentiles"}
	cmd.AddCommand(newBenchRegisterCommand(), newBenchPropagationCommand())
	return cmd
}

func newBenchRegisterCommand() *cobra.Command {
	o := bench.RegisterOptions{}
	cmd := &cobra.Command{
		Use:   "register",
		Short: "Time from agent start to Cluster Ready, for simulated agents joining a hub in this process",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := signalContext()
			defer cancel()
			return bench.RunRegister(ctx, o, cmd.OutOrStdout(), newProgress(cmd.ErrOrStderr()).step)
		},
	}
	cmd.Flags().IntVar(&o.Clusters, "clusters", 20, "number of simulated agents")
	cmd.Flags().StringVar(&o.Out, "out", "", "write the results as JSON to this file")
	return cmd
}

func newBenchPropagationCommand() *cobra.Command {
	o := bench.PropagationOptions{Members: 2, Objects: 100, Replicas: 1, Mode: devenv.ModePull, Timeout: 10 * time.Minute}
	cmd := &cobra.Command{
		Use:   "propagation",
		Short: "Time each stage from hub to members for Deployments created, updated and deleted on a local fleet",
		Long: `Start a hub and --members member clusters (as flotilla up does), place --objects Deployments on
every member, then change every image, then delete them all. For each object and member it times:
binding scheduled, Work written, applied in the member, Available in the member, status aggregated on
the hub (deletes: Work, member object, binding and template gone), and reports percentiles, member
changes per second and the CPU time of the hub, the members and the agents.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			ctx, cancel := signalContext()
			defer cancel()
			return bench.RunPropagation(ctx, o, cmd.OutOrStdout(), newProgress(cmd.ErrOrStderr()).step)
		},
	}
	cmd.Flags().IntVar(&o.Members, "members", o.Members, "number of member clusters")
	cmd.Flags().IntVar(&o.Objects, "objects", o.Objects, "number of Deployments")
	cmd.Flags().Int32Var(&o.Replicas, "replicas", o.Replicas, "replicas of each Deployment")
	cmd.Flags().StringVar(&o.Mode, "mode", o.Mode, "how members join: pull, push or mixed")
	cmd.Flags().BoolVar(&o.Sequential, "sequential", false, "one object at a time, each finished everywhere before the next")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", o.Timeout, "longest wait for one wave")
	cmd.Flags().StringVar(&o.Out, "out", "", "write the results as JSON to this file")
	return cmd
}
