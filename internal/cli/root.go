// Package cli holds the flotilla command line: one file per verb, each with an options struct that validates
// itself before anything starts.
package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/flotilla-io/flotilla/internal/controlplane"
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
	root.AddCommand(newUpCommand(), newHubCommand(&verbosity), newTokenCommand(), newJoinCommand(&verbosity), newAgentCommand(&verbosity),
		newAcceptCommand(true), newAcceptCommand(false), newGetCommand(), newDescribeCommand(), newStatusCommand(), newRebalanceCommand(), newTaintCommand(),
		newUnjoinCommand(), newKubeconfigCommand(), newKubectlCommand(), newDevCommand(&verbosity), newBenchCommand(), newVersionCommand())
	return root
}

// Execute runs the command line and returns the process exit code.
func Execute(args []string) int {
	root := NewRoot()
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		return 1
	}
	return 0
}

// signalContext ends on the first SIGINT or SIGTERM, so the command shuts down in order; a second signal exits
// at once.
func signalContext() (context.Context, context.CancelFunc) {
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

// setupLogging sends component logs to stderr at the given verbosity.
func setupLogging(verbosity int) error { return controlplane.SetupLogging(verbosity, "") }

// progress prints the steps of a long command with the time since it started.
type progress struct {
	out   io.Writer
	start time.Time
}

func newProgress(out io.Writer) *progress { return &progress{out: out, start: time.Now()} }

func (p *progress) step(msg string) {
	fmt.Fprintf(p.out, "[%6.2fs] %s\n", time.Since(p.start).Seconds(), msg)
}
