// Package planecmd is the whole flotilla command: the verbs that run control planes in this process — hub,
// up, dev and bench — with the users' verbs (cli) and the agent's (agentcmd). It is the one command package
// that links the embedded Kubernetes, etcd and Helm's SDK; kubectl-flotilla and flotilla-agent link neither.
package planecmd

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/flotilla-io/flotilla/internal/cli"
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
	installer := &agentcmd.Installer{Objects: helmchart.AgentObjects, Install: helmchart.InstallAgent, Uninstall: helmchart.UninstallAgent}
	root.AddCommand(newUpCommand(), newHubCommand(&verbosity), agentcmd.NewJoinCommand(&verbosity, installer), agentcmd.NewAgentCommand(&verbosity),
		agentcmd.NewUnjoinCommand(installer), newDevCommand(&verbosity), newBenchCommand())
	cli.AddUserCommands(root)
	agentcmd.AddVersionFlag(root)
	cli.AddCompletions(root)
	// The embedded kube-apiserver registers its own --version (verflag) on pflag's global set, which cobra
	// shows under every command; it would set the version the embedded components report and print nothing.
	if f := pflag.CommandLine.Lookup("version"); f != nil {
		f.Hidden = true
	}
	return root
}

// Execute runs the command line and returns the process exit code.
func Execute(args []string) int { return cmdutil.Execute(NewRoot(), args) }
