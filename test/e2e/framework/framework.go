// Package framework runs e2e scenarios against real processes of the built flotilla binary: a hub and member
// clusters, each in its own temporary directory with free ports. It hands tests typed clients for every
// cluster, prints every process's output and the tail of its component log when a test fails, and kills
// every child when its owner ends — the test that started it, or, for a fleet the package's tests share
// (Shared), the package's TestMain — also on a test timeout, panic or interrupt, because each child runs in
// its own process group and dies with the test binary.
package framework

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/controlplane"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// readyTimeout bounds the wait for a process to report ready; it is a safety net, not a performance target.
const readyTimeout = 3 * time.Minute

// Cluster is a hub or member process and clients for its API.
type Cluster struct {
	// Name of the cluster ("hub" for the hub).
	Name string
	// DataDir is the process's data directory.
	DataDir string
	// Kubeconfig is the path of the admin kubeconfig.
	Kubeconfig string
	// Env holds the clients.
	*testenv.Env

	t       *testing.T
	args    []string
	logFile string
	ready   string
	proc    *testenv.Process
	// agent is the pull agent JoinPull started for this member, which runs beside it; nil otherwise.
	agent *testenv.Process
	// agentDir is that agent's data directory.
	agentDir string
	// shared is the fleet that owns the process; nil when the test t owns it.
	shared *Shared
}

// Binary returns the flotilla binary under test: $FLOTILLA_BIN, or bin/flotilla at the repository root.
func Binary(t *testing.T) string {
	if bin := os.Getenv("FLOTILLA_BIN"); bin != "" {
		abs, err := filepath.Abs(bin)
		if err != nil {
			t.Fatal(err)
		}
		return abs
	}
	_, file, _, _ := runtime.Caller(0)
	bin := filepath.Join(filepath.Dir(file), "..", "..", "..", "bin", "flotilla")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("no flotilla binary: run `make build` or set FLOTILLA_BIN (%v)", err)
	}
	return bin
}

// StartHub starts `flotilla hub` and waits until it is ready; it stops when the test ends.
func StartHub(t *testing.T, extraArgs ...string) *Cluster {
	c := newHub(t, t.TempDir(), extraArgs)
	c.start()
	return c
}

// StartMember starts `flotilla dev member --name NAME` and waits until it is ready; it stops when the test
// ends.
func StartMember(t *testing.T, name string, extraArgs ...string) *Cluster {
	c := newMember(t, t.TempDir(), name, extraArgs)
	c.start()
	return c
}

func newHub(t *testing.T, parent string, extraArgs []string) *Cluster {
	dir := filepath.Join(parent, "hub")
	return &Cluster{
		Name: "hub", DataDir: dir, Kubeconfig: filepath.Join(dir, "admin.kubeconfig"), t: t,
		args: append([]string{"hub", "--data-dir", dir, "--bind-address", "127.0.0.1", "--secure-port", freePort(t), "--dashboard-port", "0", "--allow-local-member-endpoints", "--proxy-system-groups", "system:masters",
			"--clusterset-mode", "Open"}, extraArgs...), // extraArgs may say RequireBindings: the last flag counts
		logFile: filepath.Join(dir, "hub.log"), ready: "hub ready",
	}
}

func newMember(t *testing.T, parent, name string, extraArgs []string) *Cluster {
	dir := filepath.Join(parent, name)
	return &Cluster{
		Name: name, DataDir: dir, Kubeconfig: filepath.Join(dir, "kubeconfig"), t: t,
		args:    append([]string{"dev", "member", "--name", name, "--data-dir", dir, "--secure-port", freePort(t)}, extraArgs...),
		logFile: filepath.Join(dir, "member.log"), ready: "member " + name + " ready",
	}
}

// Restart stops the process with SIGTERM, waits for it to exit cleanly, and starts it again on the same data
// directory and port.
func (c *Cluster) Restart() {
	c.t.Helper()
	c.mustOwn("Restart")
	if err := c.proc.Signal(syscall.SIGTERM); err != nil {
		c.t.Fatal(err)
	}
	if err := c.proc.Wait(time.Minute); err != nil {
		c.t.Fatalf("%s did not stop cleanly: %v\n%s", c.Name, err, c.proc.Output())
	}
	c.start()
}

// Kill stops the process with SIGKILL.
func (c *Cluster) Kill() {
	c.mustOwn("Kill")
	c.proc.Kill()
}

// mustOwn fails the test when it would end or restart a cluster of a shared fleet: the tests after it
// would find the fleet changed under them. Such a test starts a fleet of its own.
func (c *Cluster) mustOwn(what string) {
	c.t.Helper()
	if c.shared != nil {
		c.t.Fatalf("%s of %s: the cluster belongs to the shared fleet; start a fleet of the test's own", what, c.Name)
	}
}

// KillAndRestart stops the process with SIGKILL and starts it again on the same data directory and port.
func (c *Cluster) KillAndRestart() {
	c.t.Helper()
	c.mustOwn("KillAndRestart")
	c.proc.Kill()
	c.start()
}

// RestartAgent kills the pull agent JoinPull started for this member and starts it again on its data
// directory, as `flotilla agent` (no token: it is joined).
func (c *Cluster) RestartAgent() {
	c.t.Helper()
	c.mustOwn("RestartAgent")
	if c.agent == nil {
		c.t.Fatalf("%s has no agent to restart", c.Name)
	}
	c.agent.Kill()
	c.agent = c.shared.spawn(c.t, "agent-"+c.Name, "agent", "--agent-data-dir", c.agentDir, "--cluster-kubeconfig", c.Kubeconfig)
}

// Freeze stops the process (SIGSTOP) without ending it, as a hung machine would, and with it the pull agent
// that runs beside a member joined by JoinPull: the agent lives on the member's machine, and one left running
// would still renew the cluster's Lease. Resume continues both.
func (c *Cluster) Freeze() {
	c.signal(syscall.SIGSTOP)
}

// Resume continues a frozen process and its agent; resuming one that is not frozen does nothing.
func (c *Cluster) Resume() {
	c.signal(syscall.SIGCONT)
}

func (c *Cluster) signal(sig syscall.Signal) {
	c.t.Helper()
	for _, p := range []*testenv.Process{c.proc, c.agent} {
		if p == nil || (p == c.agent && p.Exited()) { // an agent a test ended is no longer the member's
			continue
		}
		if err := p.Signal(sig); err != nil {
			c.t.Fatal(err)
		}
	}
}

// Flotilla runs a short flotilla command against this cluster as the hub (--kubeconfig) and returns what
// it printed; the test fails if it fails.
func (c *Cluster) Flotilla(args ...string) string {
	c.t.Helper()
	p := testenv.StartBinary(c.t, Binary(c.t), "flotilla-"+args[0], append(args, "--kubeconfig", c.Kubeconfig)...)
	if err := p.Wait(time.Minute); err != nil {
		c.t.Fatalf("flotilla %s: %v\n%s", strings.Join(args, " "), err, p.Output())
	}
	return p.Output()
}

// JoinPull joins member to hub as a Pull cluster with a fresh single-use token bound to its name, the way
// the token command prints it. The labels and location in extraArgs go to the token, which allows exactly
// them; the token reaches the agent in a file. It returns the running agent once it joined; the member's
// Freeze and Resume stop and continue the agent with it.
func JoinPull(t *testing.T, hub, member *Cluster, extraArgs ...string) *testenv.Process {
	t.Helper()
	create := []string{"token", "create", "--cluster-name", member.Name}
	var rest []string
	for i := 0; i < len(extraArgs); i++ {
		switch flag := extraArgs[i]; flag {
		case "--labels", "--provider", "--region":
			create = append(create, flag, extraArgs[i+1])
			i++
		case "--zone":
			create = append(create, "--zones", extraArgs[i+1])
			i++
		default:
			rest = append(rest, flag)
		}
	}
	out := hub.Flotilla(create...)
	var join []string
	dir := hub.shared.dir(t)
	tokenFile := filepath.Join(dir, "token-"+member.Name)
	for _, line := range strings.Split(out, "\n") {
		fields := strings.Fields(line)
		if len(fields) > 3 && strings.HasPrefix(fields[0], "FLOTILLA_TOKEN=") && fields[1] == "flotilla" && fields[2] == "join" {
			if err := os.WriteFile(tokenFile, []byte(strings.TrimPrefix(fields[0], "FLOTILLA_TOKEN=")), 0o600); err != nil {
				t.Fatal(err)
			}
			join = append(fields[2:], "--token-file", tokenFile)
		}
	}
	if join == nil {
		t.Fatalf("token create printed no join command:\n%s", out)
	}
	// Fill in the placeholders of the printed command.
	for i, f := range join {
		if f == "MEMBER_KUBECONFIG" {
			join[i] = member.Kubeconfig
		}
	}
	member.agentDir = filepath.Join(dir, "agent-"+member.Name)
	join = append(join, "--agent-data-dir", member.agentDir)
	agent := hub.shared.spawn(t, "agent-"+member.Name, append(join, rest...)...)
	member.agent = agent
	testenv.Eventually(t, readyTimeout, member.Name+" joins", func() error {
		if agent.Exited() {
			t.Fatalf("join of %s ended:\n%s", member.Name, agent.Output())
		}
		if !strings.Contains(agent.Output(), "cluster "+member.Name+" joined") {
			return errors.New("not joined yet")
		}
		return nil
	})
	return agent
}

// JoinPush joins member to hub as a Push cluster.
func JoinPush(t *testing.T, hub, member *Cluster, extraArgs ...string) {
	t.Helper()
	hub.Flotilla(append([]string{"join", "--mode", "push", "--cluster-name", member.Name, "--cluster-kubeconfig", member.Kubeconfig}, extraArgs...)...)
}

func (c *Cluster) start() {
	c.t.Helper()
	if c.proc == nil && c.shared == nil {
		c.t.Cleanup(func() {
			if c.t.Failed() {
				c.t.Logf("--- last lines of %s ---\n%s", c.logFile, tail(c.logFile, 40))
			}
		})
	}
	first := c.proc == nil
	c.proc = c.shared.spawn(c.t, c.Name, c.args...)
	proc := c.proc
	testenv.Eventually(c.t, readyTimeout, c.Name+" ready", func() error {
		if proc.Exited() && first && strings.Contains(proc.Output(), "is in use") {
			// The port freePort picked was taken before the process listened on it (another test's
			// connection took it as its own port): pick another. A restart keeps its port and does not retry.
			c.args = withFreePort(c.t, c.args)
			c.proc = c.shared.spawn(c.t, c.Name, c.args...)
			proc = c.proc
			return errors.New("port taken, started again on another")
		}
		if proc.Exited() {
			c.t.Fatalf("%s exited before it was ready:\n%s", c.Name, proc.Output())
		}
		if !strings.Contains(proc.Output(), c.ready) {
			return errors.New("not ready yet")
		}
		return nil
	})
	c.Env = testenv.Connect(c.t, c.Kubeconfig)
}

// withFreePort returns args with the value of --secure-port replaced by another free port.
func withFreePort(t *testing.T, args []string) []string {
	out := slices.Clone(args)
	for i := range out[:len(out)-1] {
		if out[i] == "--secure-port" {
			out[i+1] = freePort(t)
		}
	}
	return out
}

func freePort(t *testing.T) string {
	ports, err := controlplane.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	return strconv.Itoa(ports[0])
}

func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprint(err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// WaitClustersReady waits until the hub sees every named cluster Ready.
func WaitClustersReady(t *testing.T, hub *Cluster, names ...string) {
	t.Helper()
	testenv.Eventually(t, 2*time.Minute, "clusters Ready", func() error {
		for _, name := range names {
			c := &clusterv1alpha1.Cluster{}
			if err := hub.Client.Get(context.Background(), client.ObjectKey{Name: name}, c); err != nil {
				return err
			}
			if !meta.IsStatusConditionTrue(c.Status.Conditions, clusterv1alpha1.ClusterConditionReady) {
				return fmt.Errorf("%s is not Ready", name)
			}
		}
		return nil
	})
}
