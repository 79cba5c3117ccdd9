// Package cmdutil is the command-line plumbing every flotilla command shares, in flotilla and in
// flotilla-agent alike: kubectl's connection flags for the hub (HubFlags), kubectl's --dry-run (DryRun) and the
// check of a hub URL (ValidateHubURL), running a root command (Execute), shutting down in order on a signal (SignalContext) and
// progress lines with the time since the command started (Progress). It links no control plane and no controller, so the agent binary stays small.
package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

// Execute runs root with args and returns the process exit code: 0, the code of an ExitCode error, or 1
// after printing the error as kubectl does ("error: ..." on stderr).
func Execute(root *cobra.Command, args []string) int {
	root.SetArgs(args)
	err := root.Execute()
	var code ExitCode
	switch {
	case err == nil:
		return 0
	case errors.As(err, &code):
		return int(code)
	}
	fmt.Fprintln(root.ErrOrStderr(), "error:", err)
	return 1
}

// ExitCode ends the command with this code and prints nothing more: what the command ran has already said why
// (flotilla kubectl passes kubectl's code through).
type ExitCode int

func (c ExitCode) Error() string { return fmt.Sprintf("exit status %d", int(c)) }

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
