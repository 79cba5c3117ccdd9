// Package install tests the Helm charts and what installs them: the charts lint and render with the Helm SDK
// and apply to a real member (a `flotilla dev member` process), `flotilla join --install` and `flotilla
// unjoin --uninstall` put the agent chart's objects into a member and take them out, and the agent runs
// in-cluster as a pod would, under the ServiceAccount the chart gives it.
package install

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/flotilla-io/flotilla/internal/registration"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

// member is a running `flotilla dev member` process.
type member struct {
	name       string
	kubeconfig string
	config     *rest.Config
	kube       kubernetes.Interface
}

func startMember(t *testing.T, name string) *member {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	p := testenv.StartProcess(t, name, "dev", "member", "--name", name, "--data-dir", dir, "--nodes", "1")
	kubeconfig := filepath.Join(dir, "kubeconfig")
	testenv.Eventually(t, 2*time.Minute, "member "+name+" is ready", func() error {
		if p.Exited() {
			t.Fatalf("member exited:\n%s", p.Output())
		}
		if _, err := os.Stat(kubeconfig); err != nil {
			return err
		}
		return nil
	})
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &member{name: name, kubeconfig: kubeconfig, config: cfg, kube: kube}
}

// joinArgs returns the hub URL, a fresh bootstrap token for name and the hub's CA pins.
func joinArgs(t *testing.T, name string) (hubURL, token string, hashes []string) {
	t.Helper()
	tok, err := registration.CreateToken(context.Background(), env.Kube, time.Hour, "test", registration.Grant{ClusterName: name})
	if err != nil {
		t.Fatal(err)
	}
	hashes, err = registration.CAHashes(env.Config.CAData)
	if err != nil {
		t.Fatal(err)
	}
	return env.Config.Host, tok.String(), hashes
}

// waitOutput waits until the process p printed want.
func waitOutput(t *testing.T, p *testenv.Process, timeout time.Duration, want string) {
	t.Helper()
	testenv.Eventually(t, timeout, "output "+want, func() error {
		if strings.Contains(p.Output(), want) {
			return nil
		}
		if p.Exited() {
			t.Fatalf("exited before printing %q:\n%s", want, p.Output())
		}
		return errors.New("not yet")
	})
}

// run runs `flotilla args...` to its end and fails the test unless it succeeds; it returns the output.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	p := testenv.StartProcess(t, name, args...)
	if err := p.Wait(2 * time.Minute); err != nil {
		t.Fatalf("flotilla %s: %v\n%s", strings.Join(args, " "), err, p.Output())
	}
	return p.Output()
}
