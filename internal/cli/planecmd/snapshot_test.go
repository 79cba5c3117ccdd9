package planecmd

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runRoot runs the flotilla command line in this process and returns its error.
func runRoot(args ...string) error {
	root := NewRoot()
	root.SetArgs(args)
	root.SetOut(io.Discard)
	return root.Execute()
}

// TestCommandLineRefusesBadInput: the snapshot commands and --log-format fail on bad input before anything
// starts, and say why.
func TestCommandLineRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "taken.db")
	if err := os.WriteFile(existing, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"hub", "--log-format", "xml"}, `"xml" is not a log format: use text or json`},
		{[]string{"agent", "--log-format", "logfmt"}, `"logfmt" is not a log format`},
		{[]string{"join", "--log-format", "JSON"}, `"JSON" is not a log format`},
		{[]string{"hub", "snapshot", "save", filepath.Join(dir, "new.db")}, "--data-dir is required"},
		{[]string{"hub", "snapshot", "save", existing, "--data-dir", dir}, "a snapshot never overwrites a file"},
		{[]string{"hub", "snapshot", "save", filepath.Join(dir, "new.db"), "--data-dir", dir}, "no hub runs on " + dir},
		{[]string{"hub", "snapshot", "restore", existing}, "--data-dir is required"},
		{[]string{"hub", "snapshot", "restore", filepath.Join(dir, "missing.db"), "--data-dir", dir}, "no such file"},
		{[]string{"hub", "snapshot", "restore", existing, "--data-dir", dir}, "copy that hub's pki directory to " + filepath.Join(dir, "pki") + " first"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			err := runRoot(tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
