// Package agentcmd holds the verbs a member's agent needs — join, agent, unjoin, version. It links no
// control plane, so cmd/flotilla-agent stays small; internal/cli adds the hub's verbs on top of these. The
// plumbing both share (hub flags, signals, progress lines) is internal/cli/cmdutil.
package agentcmd

import "github.com/spf13/cobra"

// NewRoot returns the flotilla-agent command: the agent verbs alone.
func NewRoot() *cobra.Command {
	var verbosity int
	root := &cobra.Command{
		Use:           "flotilla-agent",
		Short:         "The agent of a Flotilla member cluster",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().IntVarP(&verbosity, "v", "v", 0, "log verbosity")
	root.AddCommand(NewJoinCommand(&verbosity, nil), NewAgentCommand(&verbosity), NewUnjoinCommand(nil), NewVersionCommand())
	AddVersionFlag(root)
	return root
}
