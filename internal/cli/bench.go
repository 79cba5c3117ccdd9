package cli

import (
	"github.com/spf13/cobra"

	"github.com/flotilla-io/flotilla/internal/bench"
)

func newBenchCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "bench", Short: "Benchmarks: each starts its own environment, measures and prints percentiles"}
	cmd.AddCommand(newBenchRegisterCommand())
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
