package process

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReniceReachesTheChildAndWhatItStarts: Renice, with no privilege beyond owning the child, sets the
// niceness of the child and of a process the child starts afterwards.
func TestReniceReachesTheChildAndWhatItStarts(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	dir := t.TempDir()
	started := filepath.Join(dir, "started")
	// The child waits for the renice, then starts a grandchild and writes its pid.
	p, err := Start("nice-test", filepath.Join(dir, "log"), nil, sh, "-c",
		`while [ ! -e `+filepath.Join(dir, "go")+` ]; do sleep 0.05; done; sleep 30 & echo $! > `+started+`; wait`)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	if err := p.Renice(7); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var grandchild int
	for deadline := time.Now().Add(10 * time.Second); grandchild == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the child started nothing")
		}
		if raw, err := os.ReadFile(started); err == nil && strings.HasSuffix(string(raw), "\n") {
			grandchild, _ = strconv.Atoi(strings.TrimSpace(string(raw)))
		}
	}
	for _, pid := range []int{p.cmd.Process.Pid, grandchild} {
		// getpriority's raw result is 20 - nice.
		prio, err := syscall.Getpriority(syscall.PRIO_PROCESS, pid)
		if err != nil {
			t.Fatal(err)
		}
		if nice := 20 - prio; nice != 7 {
			t.Errorf("process %d runs at niceness %d, want 7", pid, nice)
		}
	}
}
