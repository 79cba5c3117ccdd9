// Package agentcmd holds the verbs a member's agent needs — join, agent, unjoin, version — and the
// command-line plumbing they share with the rest of flotilla: the hub's kubeconfig flags, signals, progress
// lines. It links no control plane, so cmd/flotilla-agent stays small; internal/cli adds the hub's verbs on
// top of these.
package agentcmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

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
	return root
}

// Execute runs root with args and returns the process exit code.
func Execute(root *cobra.Command, args []string) int {
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		return 1
	}
	return 0
}

// SignalContext ends on the first SIGINT or SIGTERM, so the command shuts down in order; a second signal exits
// at once.
func SignalContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-signals
		cancel()
		<-signals
		fmt.Fprintln(os.Stderr, "second signal: exiting now")
		os.Exit(1)
	}()
	return ctx, cancel
}

// Progress prints the steps of a long command with the time since it started.
type Progress struct {
	out   io.Writer
	start time.Time
}

// NewProgress starts the clock of a command's progress lines.
func NewProgress(out io.Writer) *Progress { return &Progress{out: out, start: time.Now()} }

// Step prints one progress line.
func (p *Progress) Step(msg string) {
	fmt.Fprintf(p.out, "[%6.2fs] %s\n", time.Since(p.start).Seconds(), msg)
}
