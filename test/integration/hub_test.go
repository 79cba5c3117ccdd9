package integration

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	proxyv1alpha1 "github.com/flotilla-io/flotilla/api/proxy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/clusterset"
	"github.com/flotilla-io/flotilla/internal/controlplane"
	"github.com/flotilla-io/flotilla/internal/hub"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// startHub runs `flotilla hub` as a child process and waits for its admin kubeconfig.
func startHub(t *testing.T, name, dataDir string, port int, extra ...string) (*testenv.Process, *testenv.Env) {
	t.Helper()
	args := append([]string{"hub", "--data-dir", dataDir, "--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(port), "--dashboard-port", "0"}, extra...)
	p := testenv.StartProcess(t, name, args...)
	kubeconfig := filepath.Join(dataDir, "admin.kubeconfig")
	testenv.Eventually(t, 2*time.Minute, name+" writes admin.kubeconfig", func() error {
		if p.Exited() {
			t.Fatalf("%s exited:\n%s", name, p.Output())
		}
		if !strings.Contains(p.Output(), "hub ready") {
			return errors.New("not ready yet")
		}
		_, err := os.Stat(kubeconfig)
		return err
	})
	return p, testenv.Connect(t, kubeconfig)
}

func freePort(t *testing.T) int {
	ports, err := controlplane.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
}

func samplePolicy(name string) *policyv1alpha1.ClusterPropagationPolicy {
	return &policyv1alpha1.ClusterPropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: policyv1alpha1.PropagationSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment"}},
		},
	}
}

// TestHubRestartKeepsObjects kills a hub with SIGKILL and restarts it on the same data directory: every object
// is still there. A second hub on a directory in use fails at once, and SIGTERM stops the hub cleanly.
func TestHubRestartKeepsObjects(t *testing.T) {
	ctx := context.Background()
	dir, port := filepath.Join(t.TempDir(), "hub"), freePort(t)
	first, h := startHub(t, "hub-first", dir, port)
	if err := h.Client.Create(ctx, samplePolicy("survivor")); err != nil {
		t.Fatal(err)
	}
	// A new hub requires ClusterSetBindings; one that holds objects but no record of the mode (upgraded from
	// before cluster sets: here the record is deleted) records Open when it starts.
	if mode, err := clusterset.ReadMode(ctx, h.Client); err != nil || mode != clusterset.RequireBindings {
		t.Fatalf("a new hub's cluster-set mode: %s (%v), want %s", mode, err, clusterset.RequireBindings)
	}
	if err := h.Client.Delete(ctx, clusterset.ModeObject(clusterset.RequireBindings)); err != nil {
		t.Fatal(err)
	}

	second := testenv.StartProcess(t, "hub-second", "hub", "--data-dir", dir, "--secure-port", strconv.Itoa(freePort(t)))
	if err := second.Wait(time.Minute); err == nil {
		t.Fatalf("a second hub on %s started:\n%s", dir, second.Output())
	}
	if out := second.Output(); !strings.Contains(out, "is used by another process") {
		t.Fatalf("second hub did not say why it stopped:\n%s", out)
	}

	first.Kill()
	restarted, h := startHub(t, "hub-restarted", dir, port)
	got := &policyv1alpha1.ClusterPropagationPolicy{}
	if err := h.Client.Get(ctx, client.ObjectKey{Name: "survivor"}, got); err != nil {
		t.Fatalf("policy lost across kill -9 and restart: %v", err)
	}
	if got.Spec.ResourceSelectors[0].Kind != "Deployment" {
		t.Fatalf("policy changed across restart: %+v", got.Spec)
	}
	if mode, err := clusterset.ReadMode(ctx, h.Client); err != nil || mode != clusterset.Open {
		t.Errorf("an upgraded hub's cluster-set mode: %s (%v), want %s", mode, err, clusterset.Open)
	}
	// The restarted process elects under an identity of its own and leads: the lease its killed predecessor
	// held does not keep it waiting.
	testenv.Eventually(t, time.Minute, "the restarted hub leads", func() error {
		holder, err := leaseHolder(ctx, h)
		if want := hubIdentity(t, restarted); holder != want {
			return fmt.Errorf("leader %q, want %q (%v)", holder, want, err)
		}
		return nil
	})
	if hubIdentity(t, first) == hubIdentity(t, restarted) {
		t.Fatal("a restarted hub reuses its predecessor's identity")
	}
	// The proxy listens on another loopback port after the restart; the hub's aggregator follows it.
	testenv.Eventually(t, time.Minute, "the restarted hub serves the proxy API", func() error {
		return h.Kube.Discovery().RESTClient().Get().AbsPath("/apis", proxyv1alpha1.GroupName, "v1alpha1", "clusters").Do(ctx).Error()
	})

	if err := restarted.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := restarted.Wait(time.Minute); err != nil {
		t.Fatalf("hub did not exit cleanly on SIGTERM: %v\n%s", err, restarted.Output())
	}
	if !strings.Contains(restarted.Output(), "hub stopped") {
		t.Fatalf("hub did not report its shutdown:\n%s", restarted.Output())
	}
}

// TestTwoHubsShareExternalEtcd runs two hubs on one three-member etcd cluster that serves only TLS with client
// certificates (--etcd-cafile, --etcd-certfile, --etcd-keyfile): both serve the same objects, one leads the
// controllers, and the other takes over when the leader dies. The second hub's data directory starts as a copy
// of the first's (PKI and identity file), and still the two elect under different identities.
func TestTwoHubsShareExternalEtcd(t *testing.T) {
	ctx := context.Background()
	etcdServers, etcdTLS := startEtcdCluster(t, 3)
	dirA, dirB := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	etcdFlags := []string{"--etcd-servers=" + strings.Join(etcdServers, ","),
		"--etcd-cafile", etcdTLS.CAFile, "--etcd-certfile", etcdTLS.CertFile, "--etcd-keyfile", etcdTLS.KeyFile}
	hubA, a := startHub(t, "hub-a", dirA, freePort(t), etcdFlags...)
	// Hubs that serve one API share its PKI: clients, tokens and the encryption key must be valid on either.
	// Copying more of the directory, as an operator might, copies the identity file too.
	if err := os.CopyFS(filepath.Join(dirB, "pki"), os.DirFS(filepath.Join(dirA, "pki"))); err != nil {
		t.Fatal(err)
	}
	if id, err := os.ReadFile(filepath.Join(dirA, "hub-id")); err != nil {
		t.Fatal(err)
	} else if err := os.WriteFile(filepath.Join(dirB, "hub-id"), id, 0o600); err != nil {
		t.Fatal(err)
	}
	hubB, b := startHub(t, "hub-b", dirB, freePort(t), etcdFlags...)

	if err := a.Client.Create(ctx, samplePolicy("shared")); err != nil {
		t.Fatal(err)
	}
	if err := b.Client.Get(ctx, client.ObjectKey{Name: "shared"}, &policyv1alpha1.ClusterPropagationPolicy{}); err != nil {
		t.Fatalf("hub b does not serve what hub a stored: %v", err)
	}

	ids := map[string]*testenv.Process{hubIdentity(t, hubA): hubA, hubIdentity(t, hubB): hubB}
	if len(ids) != 2 {
		t.Fatalf("two hubs on copies of one data directory elect under one identity: %v", ids)
	}
	var leader string
	testenv.Eventually(t, time.Minute, "a hub leads the controllers", func() error {
		var err error
		leader, err = leaseHolder(ctx, b)
		if _, ok := ids[leader]; !ok {
			return fmt.Errorf("lease holder %q is neither hub (%v)", leader, err)
		}
		return nil
	})
	survivor := b
	if ids[leader] == hubB {
		survivor = a
	}
	ids[leader].Kill()
	testenv.Eventually(t, 2*time.Minute, "the other hub takes over", func() error {
		holder, err := leaseHolder(ctx, survivor)
		if err != nil || holder == leader || ids[holder] == nil {
			return fmt.Errorf("holder %q (was %q): %v", holder, leader, err)
		}
		return nil
	})
}

// hubIdentity is the leader-election identity a hub process announced.
func hubIdentity(t *testing.T, hub *testenv.Process) string {
	t.Helper()
	m := regexp.MustCompile(`controllers elect their leader as (\S+)`).FindStringSubmatch(hub.Output())
	if m == nil {
		t.Fatalf("%s did not say its identity:\n%s", hub.Name, hub.Output())
	}
	return m[1]
}

// TestHubPortInUse: a hub whose port another process holds exits at once, saying so, without a panic.
func TestHubPortInUse(t *testing.T) {
	holder, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	port := holder.Addr().(*net.TCPAddr).Port
	p := testenv.StartProcess(t, "hub-busy-port", "hub", "--data-dir", filepath.Join(t.TempDir(), "hub"),
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(port))
	if err := p.Wait(2 * time.Minute); err == nil {
		t.Fatalf("a hub on a port in use exited cleanly:\n%s", p.Output())
	}
	out := p.Output()
	if want := fmt.Sprintf("port %d is in use", port); !strings.Contains(out, want) {
		t.Fatalf("hub output does not say %q:\n%s", want, out)
	}
	if strings.Contains(out, "panic") {
		t.Fatalf("hub panicked:\n%s", out)
	}
}

func leaseHolder(ctx context.Context, env *testenv.Env) (string, error) {
	lease, err := env.Kube.CoordinationV1().Leases(clusterv1alpha1.SystemNamespace).Get(ctx, hub.LeaderLease, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if lease.Spec.HolderIdentity == nil {
		return "", apierrors.NewNotFound(lease.GroupVersionKind().GroupVersion().WithResource("leases").GroupResource(), "holder")
	}
	return *lease.Spec.HolderIdentity, nil
}

// startEtcdCluster starts an etcd cluster of n members in the test process, serving TLS to holders of a
// certificate of its own CA, and returns its client URLs and the client identity kube-apiserver should use.
func startEtcdCluster(t *testing.T, n int) ([]string, controlplane.EtcdTLS) {
	pki := controlplane.PKI{Dir: t.TempDir()}
	if err := pki.Ensure([]string{"localhost", "127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	serverTLS := pki.EtcdServerTLS()
	ports, err := controlplane.FreePorts(2 * n)
	if err != nil {
		t.Fatal(err)
	}
	var members, clients []string
	for i := range n {
		members = append(members, fmt.Sprintf("etcd%d=https://127.0.0.1:%d", i, ports[2*i+1]))
		clients = append(clients, fmt.Sprintf("https://127.0.0.1:%d", ports[2*i]))
	}
	dir := t.TempDir()
	errs := make(chan error, n)
	for i := range n {
		go func() {
			e, err := controlplane.StartEtcd(controlplane.EtcdConfig{
				Name: fmt.Sprintf("etcd%d", i), Dir: filepath.Join(dir, strconv.Itoa(i)),
				ClientURL: clients[i], PeerURL: strings.TrimPrefix(members[i], fmt.Sprintf("etcd%d=", i)),
				InitialCluster: members, LogFile: filepath.Join(dir, fmt.Sprintf("etcd%d.log", i)), TLS: &serverTLS,
			})
			if err == nil {
				t.Cleanup(e.Close)
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	return clients, pki.EtcdClientTLS()
}
