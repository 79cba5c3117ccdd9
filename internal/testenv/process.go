package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Process is a child flotilla process in its own process group. The kernel kills it when the test binary dies
// (also on a test timeout or panic), and the test's cleanup kills its whole group, so no process outlives the
// test run.
type Process struct {
	// Name labels the process in logs.
	Name string
	// LogPath receives the process's stdout and stderr.
	LogPath string

	cmd  *exec.Cmd
	done chan struct{}
	mu   sync.Mutex
	err  error
}

// StartProcess runs `flotilla args...` as a child of the test. The binary is $FLOTILLA_BIN when set, else the
// test binary itself acting as flotilla (which requires TestMain to call Main).
func StartProcess(t testing.TB, name string, args ...string) *Process {
	t.Helper()
	if binary := os.Getenv("FLOTILLA_BIN"); binary != "" {
		return StartBinary(t, binary, name, args...)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return start(t, self, []string{reexecVar + "=1"}, name, args...)
}

// StartBinary runs binary with args as a child of the test, like StartProcess.
func StartBinary(t testing.TB, binary, name string, args ...string) *Process {
	t.Helper()
	return start(t, binary, nil, name, args...)
}

func start(t testing.TB, binary string, extraEnv []string, name string, args ...string) *Process {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), extraEnv...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	p := &Process{Name: name, LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		logFile.Close()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("--- output of %s (%s) ---\n%s", name, strings.Join(args, " "), p.Output())
		}
	})
	return p
}

// Kill sends SIGKILL to the process group and waits for the process to exit.
func (p *Process) Kill() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// Signal sends sig to the process group.
func (p *Process) Signal(sig syscall.Signal) error { return syscall.Kill(-p.cmd.Process.Pid, sig) }

// Wait waits up to timeout for the process to exit and returns its exit error (nil for exit code 0).
func (p *Process) Wait(timeout time.Duration) error {
	select {
	case <-p.done:
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.err
	case <-time.After(timeout):
		return fmt.Errorf("%s still running after %s", p.Name, timeout)
	}
}

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Output returns what the process printed so far.
func (p *Process) Output() string {
	data, _ := os.ReadFile(p.LogPath)
	return string(data)
}
