package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/flotilla-io/flotilla/internal/cli/cmdutil"
)

// execute runs kubectl-flotilla with args as its main does and returns the exit code and what it printed.
func execute(args ...string) (code int, stdout, stderr string) {
	root := NewPluginRoot()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	code = cmdutil.Execute(root, args)
	return code, out.String(), errOut.String()
}

// TestNoKubeconfig: with no --kubeconfig, no $KUBECONFIG and no ~/.kube/config, every verb that reads the hub
// says where a kubeconfig comes from, naming --kubeconfig and the one flotilla up writes, instead of
// client-go's advice to set KUBERNETES_MASTER.
func TestNoKubeconfig(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "") // not in a pod: no in-cluster configuration either
	home := clientcmd.RecommendedHomeFile
	clientcmd.RecommendedHomeFile = filepath.Join(t.TempDir(), "config")
	defer func() { clientcmd.RecommendedHomeFile = home }()
	for _, args := range [][]string{
		{"get", "clusters"},
		{"get", "rb", "-n", "shop"},
		{"describe", "cluster", "m1"},
		{"status", "deployment/web"},
		{"token", "list"},
		{"taint", "cluster", "m1", "gpu=true:NoSchedule"},
		{"kubeconfig", "m1"},
		{"kubectl", "m1", "--", "get", "pods"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, stdout, stderr := execute(args...)
			if code != 1 || stdout != "" || stderr != "error: "+cmdutil.ErrNoKubeconfig.Error()+"\n" {
				t.Fatalf("code %d, stdout %q, stderr %q; want 1 and the error %q", code, stdout, stderr, cmdutil.ErrNoKubeconfig)
			}
			for _, want := range []string{"--kubeconfig", "~/.flotilla/up/hub.kubeconfig"} {
				if !strings.Contains(stderr, want) {
					t.Fatalf("the error does not name %s: %s", want, stderr)
				}
			}
		})
	}
}

// TestKubectlExitCode: flotilla kubectl exits with kubectl's code and adds nothing to what kubectl printed.
// The real kubectl fails to reach a hub that is not there (code 1); a stand-in exits 7, a code flotilla
// never uses of its own.
func TestKubectlExitCode(t *testing.T) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["hub"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: "secret"}
	cfg.Contexts["hub"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "admin"}
	cfg.CurrentContext = "hub"
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "hub.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	args := []string{"kubectl", "m1", "--kubeconfig", kubeconfig, "--", "get", "namespace", "default", "--request-timeout", "5s"}

	t.Run("kubectl", func(t *testing.T) {
		if _, err := exec.LookPath("kubectl"); err != nil {
			t.Skip("kubectl is not on PATH")
		}
		code, _, stderr := execute(args...)
		if code != 1 || !strings.Contains(stderr, "127.0.0.1:1") || strings.Contains(stderr, "error: exit status") {
			t.Fatalf("code %d, stderr %q; want kubectl's 1 and kubectl's error alone", code, stderr)
		}
	})
	t.Run("stand-in", func(t *testing.T) {
		bin := filepath.Join(dir, "bin")
		if err := os.Mkdir(bin, 0o755); err != nil {
			t.Fatal(err)
		}
		script := "#!/bin/sh\necho \"Error from server (NotFound): $*\" >&2\nexit 7\n"
		if err := os.WriteFile(filepath.Join(bin, "kubectl"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		t.Setenv("PATH", bin)
		code, stdout, stderr := execute(args...)
		if code != 7 || stdout != "" || !strings.HasPrefix(stderr, "Error from server (NotFound): --kubeconfig ") ||
			!strings.HasSuffix(stderr, " get namespace default --request-timeout 5s\n") || strings.Count(stderr, "\n") != 1 {
			t.Fatalf("code %d, stdout %q, stderr %q; want 7 and the stand-in's one line", code, stdout, stderr)
		}
	})
}
