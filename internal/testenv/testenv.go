// Package testenv is the integration-test harness: a real Flotilla hub (etcd, kube-apiserver, core
// controllers, CRDs, Flotilla's controllers) started once per test package in TestMain and torn down after
// the package's tests, plus child processes of the flotilla command for tests that restart or kill a hub.
//
//	var env *testenv.Env
//
//	func TestMain(m *testing.M) { testenv.Main(m, &env) }
package testenv

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/internal/cli/planecmd"
	"github.com/flotilla-io/flotilla/internal/clusterset"
	"github.com/flotilla-io/flotilla/internal/controlplane"
	"github.com/flotilla-io/flotilla/internal/hub"
	"github.com/flotilla-io/flotilla/internal/logging"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

// Env is a running hub for the tests of one package.
type Env struct {
	// Config reaches the hub as cluster admin.
	Config *rest.Config
	// Client is a controller-runtime client that knows every Flotilla kind.
	Client client.Client
	// Kube is a typed client for the built-in kinds.
	Kube kubernetes.Interface
	// Kubeconfig is the path of the hub's admin kubeconfig.
	Kubeconfig string
	// DataDir is the hub's data directory.
	DataDir string
	// DashboardURL is where the hub serves the dashboard (an in-process hub only).
	DashboardURL string
	// EtcdServers and EtcdTLS reach the etcd the hub's kube-apiserver stores in, as it does.
	EtcdServers []string
	EtcdTLS     *controlplane.EtcdTLS
}

// reexecVar makes a test binary act as the flotilla command, so tests can start hubs as child processes
// without a separately built binary.
const reexecVar = "FLOTILLA_TESTENV_REEXEC"

// Main runs a package's tests against a fresh in-process hub and exits with their result. When the test
// binary was started as a flotilla child process (see StartProcess), it runs the command line instead.
func Main(m *testing.M, env **Env) { os.Exit(run(m, env, StartHub)) }

// MainCluster is Main with a plain Kubernetes control plane, without any Flotilla part: an existing cluster
// for `flotilla hub --kubeconfig` to adopt.
func MainCluster(m *testing.M, env **Env) { os.Exit(run(m, env, StartCluster)) }

func run(m *testing.M, env **Env, start func(dataDir string) (*Env, func(), error)) int {
	if os.Getenv(reexecVar) == "1" {
		return planecmd.Execute(os.Args[1:])
	}
	dir, err := os.MkdirTemp("", "flotilla-testenv-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	dataDir := filepath.Join(dir, "hub")
	e, stop, err := start(dataDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv: starting the control plane:", err, "(logs in", filepath.Join(dataDir, "hub.log")+")")
		return 1
	}
	*env = e
	code := m.Run()
	stop()
	return code
}

// StartCluster starts a plain control plane (etcd, kube-apiserver, the hub's core controllers) in this
// process and writes its admin kubeconfig into dataDir.
func StartCluster(dataDir string) (*Env, func(), error) {
	if err := startLogging(dataDir); err != nil {
		return nil, nil, err
	}
	cp, err := controlplane.Start(context.Background(), controlplane.Config{
		Name: "existing", DataDir: dataDir, BindAddress: net.IPv4(127, 0, 0, 1), // port 0: a free one
		Controllers: controlplane.HubControllers,
	})
	if err != nil {
		return nil, nil, err
	}
	kubeconfig := filepath.Join(dataDir, "admin.kubeconfig")
	cfg, err := cp.RESTConfig()
	if err == nil {
		err = cp.WriteAdminKubeconfig(kubeconfig)
	}
	if err != nil {
		cp.Stop()
		return nil, nil, err
	}
	env, err := newEnv(cfg, kubeconfig, dataDir)
	if err != nil {
		cp.Stop()
		return nil, nil, err
	}
	return env, cp.Stop, nil
}

func startLogging(dataDir string) error {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return err
	}
	return logging.Setup(2, filepath.Join(dataDir, "hub.log"))
}

// StartHub starts a hub in this process (hub.StartLocal) with its data in dataDir and returns it with a
// function that stops it.
func StartHub(dataDir string) (*Env, func(), error) {
	if err := startLogging(dataDir); err != nil {
		return nil, nil, err
	}
	h, stop, err := hub.StartLocal(dataDir, func(string) {})
	if err != nil {
		return nil, nil, err
	}
	env, err := newEnv(h.Config, h.AdminKubeconfig, dataDir)
	if err != nil {
		stop()
		return nil, nil, err
	}
	env.EtcdServers, env.EtcdTLS = h.Etcd()
	env.DashboardURL = h.DashboardURL
	return env, stop, nil
}

func newEnv(cfg *rest.Config, kubeconfig, dataDir string) (env *Env, err error) {
	env = &Env{Config: cfg, Kubeconfig: kubeconfig, DataDir: dataDir}
	if env.Client, err = client.New(cfg, client.Options{Scheme: scheme.New()}); err != nil {
		return nil, err
	}
	if env.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	return env, nil
}

// Connect returns an Env for the cluster of a kubeconfig file, such as a child hub's admin.kubeconfig.
func Connect(t testing.TB, kubeconfig string) *Env {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("loading %s: %v", kubeconfig, err)
	}
	env, err := newEnv(cfg, kubeconfig, filepath.Dir(kubeconfig))
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// SetClusterSetMode switches the hub's recorded cluster-set mode (the hub of tests starts Open) and switches
// it back when the test ends.
func (e *Env) SetClusterSetMode(t *testing.T, mode clusterset.Mode) {
	t.Helper()
	set := func(m clusterset.Mode) error {
		patch := fmt.Sprintf(`{"data":{%q:%q}}`, clusterset.ModeKey, m)
		return e.Client.Patch(context.Background(), clusterset.ModeObject(m), client.RawPatch(types.MergePatchType, []byte(patch)))
	}
	if err := set(mode); err != nil {
		t.Fatalf("switching the cluster-set mode to %s: %v", mode, err)
	}
	t.Cleanup(func() {
		if err := set(clusterset.Open); err != nil {
			t.Errorf("switching the cluster-set mode back to Open: %v", err)
		}
	})
}
