// Package cli holds the flotilla command line: one file per verb, each with an options struct that validates
// itself before anything starts. The agent's verbs live in agentcmd, which cmd/flotilla-agent uses alone.
package cli

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/flotilla-io/flotilla/internal/cli/agentcmd"
	"github.com/flotilla-io/flotilla/internal/cli/cmdutil"
	"github.com/flotilla-io/flotilla/internal/helmchart"
)

// NewRoot returns the flotilla command with every subcommand.
func NewRoot() *cobra.Command {
	var verbosity int
	root := &cobra.Command{
		Use:           "flotilla",
		Short:         "Flotilla runs ordinary Kubernetes objects across many clusters",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().IntVarP(&verbosity, "v", "v", 0, "log verbosity of the embedded Kubernetes components")
	installer := &agentcmd.Installer{Install: helmchart.InstallAgent, Uninstall: helmchart.UninstallAgent}
	root.AddCommand(newUpCommand(), newHubCommand(&verbosity), newTokenCommand(), agentcmd.NewJoinCommand(&verbosity, installer), agentcmd.NewAgentCommand(&verbosity),
		newAcceptCommand(true), newAcceptCommand(false), newGetCommand(), newDescribeCommand(), newStatusCommand(), newRolloutCommand(), newExplainCommand(), newDashboardCommand(), newRebalanceCommand(), newTaintCommand(), newClusterSetCommand(),
		agentcmd.NewUnjoinCommand(installer), newKubeconfigCommand(), newKubectlCommand(), newDevCommand(&verbosity), newBenchCommand(), agentcmd.NewVersionCommand())
	agentcmd.AddVersionFlag(root)
	// The embedded kube-apiserver registers its own --version (verflag) on pflag's global set, which cobra
	// shows under every command; it would set the version the embedded components report and print nothing.
	if f := pflag.CommandLine.Lookup("version"); f != nil {
		f.Hidden = true
	}
	return root
}

// Execute runs the command line and returns the process exit code.
func Execute(args []string) int { return cmdutil.Execute(NewRoot(), args) }
