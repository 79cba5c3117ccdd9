// Package cli holds the verbs of Flotilla's users — get, describe, status, rollout, addon, token, kubeconfig and the
// rest that read and change the hub through its API — one file per verb, each with an options struct that
// validates itself before anything starts. They link no control plane: kubectl-flotilla is these verbs alone
// (NewPluginRoot), and flotilla adds them (AddUserCommands) to the verbs that run a hub or a fleet
// (planecmd) and the agent's (agentcmd).
package cli

import (
	"context"
	"io"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/cli/agentcmd"
)

// AddUserCommands adds the users' verbs and version to root.
func AddUserCommands(root *cobra.Command) {
	root.AddCommand(newTokenCommand(), newAcceptCommand(true), newAcceptCommand(false), newGetCommand(), newDescribeCommand(),
		newStatusCommand(), newRolloutCommand(), newExplainCommand(), newDiffCommand(), newDashboardCommand(), newRebalanceCommand(),
		newTaintCommand(), newClusterSetCommand(), newAddOnCommand(), newKubeconfigCommand(), newKubectlCommand(), newPromoteCommand(), agentcmd.NewVersionCommand())
}

// NewPluginRoot returns kubectl-flotilla, the kubectl plugin: `kubectl flotilla get clusters` runs what
// `flotilla get clusters` does.
func NewPluginRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "kubectl-flotilla",
		Short: "Flotilla's commands for the users of a hub, as a kubectl plugin",
		Long: `Flotilla's commands for the users of a hub, as a kubectl plugin: every verb of flotilla but those
that run a hub, a fleet or an agent (up, hub, dev, bench, join, agent and unjoin).`,
		// kubectl runs kubectl-flotilla for "kubectl flotilla"; help and usage lines say what was typed.
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl flotilla"},
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	AddUserCommands(root)
	agentcmd.AddVersionFlag(root)
	AddCompletions(root)
	return root
}

// PrintClusterTable prints clusters as `flotilla get clusters -o wide` does; flotilla up shows the fleet it
// started with it.
func PrintClusterTable(ctx context.Context, out io.Writer, c client.Client, clusters []clusterv1alpha1.Cluster) error {
	table := clusterTable(clusters, lastRenewals(ctx, c, clusters))
	return (listOutput{format: "wide"}).tablePrinter().PrintObj(table, out)
}
