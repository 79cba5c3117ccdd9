package testenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flotilla-io/flotilla/internal/process"
)

// Process is a child flotilla process of a test; it is killed with its process group when the test ends,
// and by the kernel when the test binary dies (also on a test timeout or panic).
type Process = process.Process

// StartProcess runs `flotilla args...` as a child of the test. The binary is $FLOTILLA_BIN when set, else the
// test binary itself acting as flotilla (which requires TestMain to call Main).
func StartProcess(t testing.TB, name string, args ...string) *Process {
	t.Helper()
	return StartProcessEnv(t, nil, name, args...)
}

// StartProcessEnv is StartProcess with extra environment variables (KEY=VALUE) for the child.
func StartProcessEnv(t testing.TB, env []string, name string, args ...string) *Process {
	t.Helper()
	if binary := os.Getenv("FLOTILLA_BIN"); binary != "" {
		return start(t, binary, env, name, args...)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return start(t, self, append([]string{reexecVar + "=1"}, env...), name, args...)
}

// StartBinary runs binary with args as a child of the test, like StartProcess.
func StartBinary(t testing.TB, binary, name string, args ...string) *Process {
	t.Helper()
	return start(t, binary, nil, name, args...)
}

func start(t testing.TB, binary string, env []string, name string, args ...string) *Process {
	t.Helper()
	p, err := process.Start(name, filepath.Join(t.TempDir(), name+".log"), env, binary, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("--- output of %s (%s) ---\n%s", name, strings.Join(args, " "), p.Output())
		}
	})
	return p
}
