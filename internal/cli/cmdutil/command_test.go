package cmdutil

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/spf13/cobra"
)

// TestExecute: an error is one "error: ..." line on stderr and code 1, as kubectl prints it; an ExitCode
// (a command that has already said why, as kubectl run by flotilla kubectl) is passed through with nothing
// printed; a bad flag is an error like any other.
func TestExecute(t *testing.T) {
	for _, tt := range []struct {
		name   string
		args   []string
		err    error
		code   int
		stderr string
	}{
		{name: "success", code: 0},
		{name: "error", err: errors.New("cluster \"m9\" not found"), code: 1, stderr: "error: cluster \"m9\" not found\n"},
		{name: "wrapped", err: fmt.Errorf("hub kubeconfig: %w", errors.New("no such file")), code: 1, stderr: "error: hub kubeconfig: no such file\n"},
		{name: "exit code", err: ExitCode(7), code: 7},
		{name: "wrapped exit code", err: fmt.Errorf("kubectl: %w", ExitCode(2)), code: 2},
		{name: "bad flag", args: []string{"--nope"}, code: 1, stderr: "error: unknown flag: --nope\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := &cobra.Command{Use: "flotilla", SilenceUsage: true, SilenceErrors: true,
				RunE: func(*cobra.Command, []string) error { return tt.err }}
			var stdout, stderr bytes.Buffer
			root.SetOut(&stdout)
			root.SetErr(&stderr)
			if code := Execute(root, tt.args); code != tt.code {
				t.Errorf("code = %d, want %d", code, tt.code)
			}
			if stderr.String() != tt.stderr || stdout.String() != "" {
				t.Errorf("stderr %q, stdout %q; want stderr %q and nothing on stdout", stderr.String(), stdout.String(), tt.stderr)
			}
		})
	}
}
