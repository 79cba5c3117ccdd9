package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/controlplane"
	"github.com/flotilla-io/flotilla/internal/hub"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// startHub runs `flotilla hub` as a child process and waits for its admin kubeconfig.
func startHub(t *testing.T, name, dataDir string, port int, extra ...string) (*testenv.Process, *testenv.Env) {
	t.Helper()
	args := append([]string{"hub", "--data-dir", dataDir, "--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(port)}, extra...)
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

// TestTwoHubsShareExternalEtcd runs two hubs on one three-member etcd cluster: both serve the same objects,
// one leads the controllers, and the other takes over when the leader dies.
func TestTwoHubsShareExternalEtcd(t *testing.T) {
	ctx := context.Background()
	etcdServers := startEtcdCluster(t, 3)
	dirA, dirB := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	etcdFlag := "--etcd-servers=" + strings.Join(etcdServers, ",")
	hubA, a := startHub(t, "hub-a", dirA, freePort(t), etcdFlag)
	// Hubs that serve one API share its PKI: clients and tokens must be valid on either.
	if err := os.CopyFS(filepath.Join(dirB, "pki"), os.DirFS(filepath.Join(dirA, "pki"))); err != nil {
		t.Fatal(err)
	}
	hubB, b := startHub(t, "hub-b", dirB, freePort(t), etcdFlag)

	if err := a.Client.Create(ctx, samplePolicy("shared")); err != nil {
		t.Fatal(err)
	}
	if err := b.Client.Get(ctx, client.ObjectKey{Name: "shared"}, &policyv1alpha1.ClusterPropagationPolicy{}); err != nil {
		t.Fatalf("hub b does not serve what hub a stored: %v", err)
	}

	ids := map[string]*testenv.Process{hubIdentity(t, dirA): hubA, hubIdentity(t, dirB): hubB}
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

func hubIdentity(t *testing.T, dataDir string) string {
	data, err := os.ReadFile(filepath.Join(dataDir, "hub-id"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

func leaseHolder(ctx context.Context, env *testenv.Env) (string, error) {
	lease, err := env.Kube.CoordinationV1().Leases(hub.SystemNamespace).Get(ctx, hub.LeaderLease, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if lease.Spec.HolderIdentity == nil {
		return "", apierrors.NewNotFound(lease.GroupVersionKind().GroupVersion().WithResource("leases").GroupResource(), "holder")
	}
	return *lease.Spec.HolderIdentity, nil
}

// startEtcdCluster starts an etcd cluster of n members in the test process and returns its client URLs.
func startEtcdCluster(t *testing.T, n int) []string {
	ports, err := controlplane.FreePorts(2 * n)
	if err != nil {
		t.Fatal(err)
	}
	var members, clients []string
	for i := range n {
		members = append(members, fmt.Sprintf("etcd%d=http://127.0.0.1:%d", i, ports[2*i+1]))
		clients = append(clients, fmt.Sprintf("http://127.0.0.1:%d", ports[2*i]))
	}
	dir := t.TempDir()
	errs := make(chan error, n)
	for i := range n {
		go func() {
			e, err := controlplane.StartEtcd(controlplane.EtcdConfig{
				Name: fmt.Sprintf("etcd%d", i), Dir: filepath.Join(dir, strconv.Itoa(i)),
				ClientURL: clients[i], PeerURL: strings.TrimPrefix(members[i], fmt.Sprintf("etcd%d=", i)),
				InitialCluster: members, LogFile: filepath.Join(dir, fmt.Sprintf("etcd%d.log", i)),
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
	return clients
}
