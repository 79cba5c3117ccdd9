package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/controlplane"
	"github.com/flotilla-io/flotilla/internal/process"
	"github.com/flotilla-io/flotilla/internal/registration"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

// hollowFleet is a hub running as a child process, so that its CPU and memory are its own, with hollow
// clusters (labelled bench=hollow) joined to it from this process.
type hollowFleet struct {
	hubDir string
	// port is the hub API's, dashboardPort the dashboard's.
	port, dashboardPort int
	hub                 *process.Process
	config              *rest.Config
	kube                kubernetes.Interface
	admin               client.Client
	agents              []*hollowAgent
	// registered is how long all clusters took to join and become Ready, 32 joining at a time.
	registered time.Duration
}

// startHollowFleet starts a hub in DIR/hub with hubArgs and joins n hollow clusters to it with a token made
// for purpose. On success the caller stops the hub (stopHub); on failure it is stopped already.
func startHollowFleet(ctx context.Context, dir string, n int, purpose string, progress func(string), hubArgs ...string) (_ *hollowFleet, err error) {
	ports, err := controlplane.FreePorts(2)
	if err != nil {
		return nil, err
	}
	f := &hollowFleet{hubDir: filepath.Join(dir, "hub"), port: ports[0], dashboardPort: ports[1]}
	if err := f.startHub(ctx, hubArgs...); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			f.stopHub()
		}
	}()
	progress("hub ready at " + f.config.Host)
	token, err := registration.CreateToken(ctx, f.kube, 2*time.Hour, purpose, registration.Grant{Labels: map[string]string{"bench": "hollow"}})
	if err != nil {
		return nil, err
	}
	hashes, err := registration.CAHashes(f.config.CAData)
	if err != nil {
		return nil, err
	}
	started := time.Now()
	if f.agents, err = joinAll(ctx, hubAccess{url: f.config.Host, token: token.String(), caHashes: hashes}, dir, n, progress); err != nil {
		return nil, err
	}
	if err := waitAllReady(ctx, f.admin, n); err != nil {
		return nil, err
	}
	f.registered = time.Since(started)
	progress(fmt.Sprintf("%d clusters Ready after %.1fs", n, f.registered.Seconds()))
	return f, nil
}

// startHub runs `flotilla hub` on the fleet's data directory and port with args, and connects the fleet's
// admin clients once it is ready.
func (f *hollowFleet) startHub(ctx context.Context, args ...string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(f.hubDir, 0o700); err != nil {
		return err
	}
	args = append([]string{"hub", "--data-dir", f.hubDir, "--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(f.port), "--dashboard-port", strconv.Itoa(f.dashboardPort), "--allow-local-member-endpoints", "--proxy-system-groups", "system:masters"}, args...)
	p, err := process.Start("hub", filepath.Join(f.hubDir, "hub.out"), nil, self, args...)
	if err != nil {
		return err
	}
	if err := process.WaitFor(ctx, p, "hub ready"); err != nil {
		p.Kill()
		return err
	}
	if err := f.connect(); err != nil {
		p.Kill()
		return err
	}
	f.hub = p
	return nil
}

func (f *hollowFleet) connect() (err error) {
	if f.config, err = loadConfig(filepath.Join(f.hubDir, "admin.kubeconfig")); err != nil {
		return err
	}
	if f.kube, err = kubernetes.NewForConfig(f.config); err != nil {
		return err
	}
	f.admin, err = client.New(f.config, client.Options{Scheme: scheme.New()})
	return err
}

// restartHub stops the hub and starts it again on the same data directory and port with args: the
// clusters, their credentials and every object stay, and the agents reconnect by themselves.
func (f *hollowFleet) restartHub(ctx context.Context, args ...string) error {
	if err := f.hub.Stop(time.Minute); err != nil {
		return fmt.Errorf("stopping the hub: %w", err)
	}
	f.hub = nil
	return f.startHub(ctx, args...)
}

// stopHub stops the hub, if it runs.
func (f *hollowFleet) stopHub() {
	if f.hub != nil {
		_ = f.hub.Stop(30 * time.Second)
	}
}

// joinAll joins n hollow agents, a few at a time, and starts them.
func joinAll(ctx context.Context, hub hubAccess, dir string, n int, progress func(string)) ([]*hollowAgent, error) {
	const parallel = 32
	kinds := newHollowKinds()
	agents := make([]*hollowAgent, n)
	errs := make([]error, n)
	slots := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	var mu sync.Mutex
	joined := 0
	for i := range n {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			a, err := joinHollow(ctx, hub, dir, fmt.Sprintf("hollow-%04d", i), kinds)
			if err == nil {
				err = a.start(ctx)
			}
			agents[i], errs[i] = a, err
			mu.Lock()
			defer mu.Unlock()
			if joined++; joined%100 == 0 {
				progress(fmt.Sprintf("%d/%d clusters joined", joined, n))
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return agents, nil
}

func waitAllReady(ctx context.Context, admin client.Client, n int) error {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		clusters := &clusterv1alpha1.ClusterList{}
		if err := admin.List(ctx, clusters); err != nil {
			return err
		}
		ready := 0
		for _, c := range clusters.Items {
			if meta.IsStatusConditionTrue(c.Status.Conditions, clusterv1alpha1.ClusterConditionReady) {
				ready++
			}
		}
		if ready >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d clusters Ready after 5 minutes", ready, n)
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}
