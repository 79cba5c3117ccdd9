package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// TestKubectlPlugin: with bin/kubectl-flotilla on PATH, `kubectl flotilla get clusters` lists the fleet, and
// `kubectl flotilla kubectl m3 -- get` of an object m3 does not have exits with kubectl's code 1, kubectl's
// NotFound error and nothing added.
func TestKubectlPlugin(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not on PATH: the plugin is not tried")
	}
	f := useFleet(t)
	env := append(os.Environ(), "PATH="+filepath.Dir(pluginBinary(t))+string(os.PathListSeparator)+os.Getenv("PATH"))

	code, out, stderr := runCommand(t, env, kubectl, "flotilla", "get", "clusters", "--kubeconfig", f.hub.Kubeconfig)
	if code != 0 {
		t.Fatalf("kubectl flotilla get clusters: exit code %d\n%s", code, stderr)
	}
	for _, name := range []string{"m1", "m2", "m3"} {
		if !strings.Contains(out, "\n"+name+" ") {
			t.Fatalf("kubectl flotilla get clusters does not list %s:\n%s", name, out)
		}
	}

	f.memberNamespace(t, f.m3)
	code, out, stderr = runCommand(t, env, kubectl, "flotilla", "kubectl", "m3", "--kubeconfig", f.hub.Kubeconfig, "--",
		"get", "configmap", "missing", "-n", f.ns)
	if code != 1 || out != "" || !strings.Contains(stderr, `configmaps "missing" not found`) || strings.Contains(stderr, "exit status") {
		t.Fatalf("kubectl flotilla kubectl m3 -- get configmap missing: exit code %d, stdout %q, stderr %q; want kubectl's 1 and its NotFound alone", code, out, stderr)
	}
}

// TestPluginWithoutKubeconfig: in a home with no kubeconfig and no $KUBECONFIG, kubectl-flotilla and flotilla
// fail with one error line that names --kubeconfig and ~/.flotilla/up/hub.kubeconfig.
func TestPluginWithoutKubeconfig(t *testing.T) {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBECONFIG=") && !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "KUBERNETES_SERVICE_") {
			env = append(env, kv)
		}
	}
	env = append(env, "HOME="+t.TempDir())
	for _, bin := range []string{pluginBinary(t), framework.Binary(t)} {
		code, out, stderr := runCommand(t, env, bin, "get", "clusters")
		if code != 1 || out != "" || !strings.HasPrefix(stderr, "error: no kubeconfig") || strings.Count(stderr, "\n") != 1 ||
			!strings.Contains(stderr, "--kubeconfig") || !strings.Contains(stderr, "~/.flotilla/up/hub.kubeconfig") {
			t.Fatalf("%s get clusters without a kubeconfig: exit code %d, stdout %q, stderr %q", filepath.Base(bin), code, out, stderr)
		}
	}
}

// pluginBinary is kubectl-flotilla, which make build writes beside flotilla.
func pluginBinary(t *testing.T) string {
	bin := filepath.Join(filepath.Dir(framework.Binary(t)), "kubectl-flotilla")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("no kubectl-flotilla beside flotilla: run `make build` (%v)", err)
	}
	return bin
}

// runCommand runs name with args and env for at most a minute and returns its exit code and what it printed.
func runCommand(t *testing.T, env []string, name string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("%s: %v", name, err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
}
