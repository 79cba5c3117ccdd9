package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/internal/bench/hollow"
	"github.com/flotilla-io/flotilla/internal/controlplane"
	"github.com/flotilla-io/flotilla/internal/devenv"
	"github.com/flotilla-io/flotilla/internal/logging"
	"github.com/flotilla-io/flotilla/internal/process"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

// Every benchmark starts the same way, with this preamble: a work directory of its own that also receives the
// component logs (workDir), then a hub as a child process (so that its CPU and memory are its own) on a free
// port, and the admin's clients of it (hubAdmin). Members then join as `flotilla up` joins them (memberFleet:
// propagation, failover, mcs, proxy, fleet-list), or hollow agents of this process do (hollowFleet: scale,
// dashboard). Only register starts its hub in this process instead (hub.StartLocal).

// hubAdmin reaches a hub as its admin, without client-side rate limits (loadConfig).
type hubAdmin struct {
	config *rest.Config
	kube   kubernetes.Interface
	admin  client.Client
}

// connectHub builds the admin's clients of the hub from its kubeconfig.
func connectHub(kubeconfig string) (h hubAdmin, err error) {
	if h.config, err = loadConfig(kubeconfig); err != nil {
		return hubAdmin{}, err
	}
	if h.kube, err = kubernetes.NewForConfig(h.config); err != nil {
		return hubAdmin{}, err
	}
	if h.admin, err = client.New(h.config, client.Options{Scheme: scheme.New()}); err != nil {
		return hubAdmin{}, err
	}
	return h, nil
}

// memberFleet is a hub and member clusters started as `flotilla up` starts them, and the admin's clients of each.
type memberFleet struct {
	hubAdmin
	env *devenv.Environment
	// memberConfigs and members reach each member as its admin, by member name, without rate limits.
	memberConfigs map[string]*rest.Config
	members       map[string]kubernetes.Interface
	removeDir     func()
}

// startMemberFleet makes the work directory of the benchmark called name and starts up's hub and members in it
// (it sets up.DataDir and up.HubPort), then connects to each. On success the caller stops the fleet (stop);
// on failure nothing is left running.
func startMemberFleet(ctx context.Context, name string, up devenv.UpOptions, progress func(string)) (_ *memberFleet, err error) {
	dir, removeDir, err := workDir(name)
	if err != nil {
		return nil, err
	}
	ports, err := controlplane.FreePorts(1)
	if err != nil {
		removeDir()
		return nil, err
	}
	up.DataDir, up.HubPort = dir, ports[0]
	env, err := devenv.Up(ctx, &up, progress)
	if err != nil {
		removeDir()
		return nil, err
	}
	f := &memberFleet{env: env, memberConfigs: map[string]*rest.Config{}, members: map[string]kubernetes.Interface{}, removeDir: removeDir}
	defer func() {
		if err != nil {
			f.stop()
		}
	}()
	if f.hubAdmin, err = connectHub(env.HubKubeconfig); err != nil {
		return nil, err
	}
	for member, kubeconfig := range env.MemberKubeconfigs {
		if f.memberConfigs[member], err = loadConfig(kubeconfig); err != nil {
			return nil, err
		}
		if f.members[member], err = kubernetes.NewForConfig(f.memberConfigs[member]); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// stop stops the hub and the members and removes the work directory.
func (f *memberFleet) stop() {
	f.env.Stop()
	f.removeDir()
}

// hollowFleet is a hub with hollow clusters (labelled hollow.LabelKey=hollow.LabelValue, named
// hollow.ClusterName) joined to it from this process.
type hollowFleet struct {
	hubAdmin
	hubDir string
	// port is the hub API's, dashboardPort the dashboard's.
	port, dashboardPort int
	hub                 *process.Process
	// replicas are the hub's other processes (startShardedFleet), on etcd, which this process runs.
	replicas []*process.Process
	etcd     *controlplane.Etcd
	agents   []*hollow.Agent
	// registered is how long all clusters took to join and become Ready, 32 joining at a time.
	registered time.Duration
	// dir is the run's work directory, which holds every process's log; removeDir removes it.
	dir       string
	removeDir func()
}

// startHollowFleet makes the work directory of the benchmark called name, starts a hub in DIR/hub with
// hubArgs and joins n hollow clusters to it. On success the caller stops the fleet (stop); on failure
// nothing is left running.
func startHollowFleet(ctx context.Context, name string, n int, progress func(string), hubArgs ...string) (_ *hollowFleet, err error) {
	return startShardedFleet(ctx, name, n, 0, progress, hubArgs...)
}

// startShardedFleet is startHollowFleet with, when hubs > 0, an etcd of this process and hubs hub processes
// on it (with --shard when more than one): the first in DIR/hub, where the agents join, and the others in
// DIR/hub-2... with a copy of its PKI.
func startShardedFleet(ctx context.Context, name string, n, hubs int, progress func(string), hubArgs ...string) (_ *hollowFleet, err error) {
	dir, removeDir, err := workDir(name)
	if err != nil {
		return nil, err
	}
	ports, err := controlplane.FreePorts(2)
	if err != nil {
		removeDir()
		return nil, err
	}
	f := &hollowFleet{hubDir: filepath.Join(dir, "hub"), port: ports[0], dashboardPort: ports[1], dir: dir, removeDir: removeDir}
	defer func() {
		if err != nil {
			f.stop()
		}
	}()
	if hubs > 0 {
		if hubArgs, err = f.startEtcd(dir, hubs, hubArgs); err != nil {
			return nil, err
		}
	}
	if err := f.startHub(ctx, hubArgs...); err != nil {
		return nil, err
	}
	progress("hub ready at " + f.config.Host)
	for i := 2; i <= hubs; i++ {
		if err := f.startReplica(ctx, filepath.Join(dir, fmt.Sprintf("hub-%d", i)), hubArgs...); err != nil {
			return nil, err
		}
		progress(fmt.Sprintf("hub replica %d ready", i))
	}
	access, err := hollow.NewAccess(ctx, f.kube, f.config, 2*time.Hour, "bench "+name)
	if err != nil {
		return nil, err
	}
	started := time.Now()
	if f.agents, err = hollow.JoinAll(ctx, access, dir, n, progress); err != nil {
		return nil, err
	}
	if err := hollow.WaitAllReady(ctx, f.admin, n); err != nil {
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
	args = append([]string{"hub", "--data-dir", f.hubDir, "--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(f.port), "--dashboard-port", strconv.Itoa(f.dashboardPort), "--allow-local-member-endpoints", "--proxy-system-groups", "system:masters", "--clusterset-mode", "Open"}, args...)
	p, err := process.Start("hub", filepath.Join(f.hubDir, "hub.out"), nil, self, args...)
	if err != nil {
		return err
	}
	if err := process.WaitFor(ctx, p, "hub ready"); err != nil {
		p.Kill()
		return err
	}
	if f.hubAdmin, err = connectHub(filepath.Join(f.hubDir, "admin.kubeconfig")); err != nil {
		p.Kill()
		return err
	}
	f.hub = p
	return nil
}

// startEtcd starts an etcd member in this process for hubs hub processes and returns hubArgs with the flags
// that put them on it.
func (f *hollowFleet) startEtcd(dir string, hubs int, hubArgs []string) ([]string, error) {
	ports, err := controlplane.FreePorts(2)
	if err != nil {
		return nil, err
	}
	client := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	if f.etcd, err = controlplane.StartEtcd(controlplane.EtcdConfig{Name: "bench", Dir: filepath.Join(dir, "etcd"),
		ClientURL: client, PeerURL: fmt.Sprintf("http://127.0.0.1:%d", ports[1]), LogFile: filepath.Join(dir, "etcd.log")}); err != nil {
		return nil, err
	}
	hubArgs = append([]string{"--etcd-servers", client}, hubArgs...)
	if hubs > 1 {
		hubArgs = append(hubArgs, "--shard")
	}
	return hubArgs, nil
}

// startReplica runs another `flotilla hub` on the fleet's etcd in dir, with a copy of the first hub's PKI.
func (f *hollowFleet) startReplica(ctx context.Context, dir string, args ...string) error {
	if err := os.CopyFS(filepath.Join(dir, "pki"), os.DirFS(filepath.Join(f.hubDir, "pki"))); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	ports, err := controlplane.FreePorts(2)
	if err != nil {
		return err
	}
	args = append([]string{"hub", "--data-dir", dir, "--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(ports[0]), "--dashboard-port", strconv.Itoa(ports[1]), "--allow-local-member-endpoints", "--proxy-system-groups", "system:masters"}, args...)
	p, err := process.Start("hub", filepath.Join(dir, "hub.out"), nil, self, args...)
	if err != nil {
		return err
	}
	f.replicas = append(f.replicas, p)
	return process.WaitFor(ctx, p, "hub ready")
}

// hubs are the fleet's hub processes, the first one first.
func (f *hollowFleet) hubs() []*process.Process {
	return append([]*process.Process{f.hub}, f.replicas...)
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

// stop stops the hub, if it runs, and removes the work directory.
func (f *hollowFleet) stop() {
	for _, p := range f.replicas {
		_ = p.Stop(30 * time.Second)
	}
	if f.hub != nil {
		_ = f.hub.Stop(30 * time.Second)
	}
	if f.etcd != nil {
		f.etcd.Close()
	}
	f.removeDir()
}

// stopKeepingLogs stops the fleet like stop, but leaves its work directory, with every process's log, for
// whoever reads the failure: it returns err saying where.
func (f *hollowFleet) stopKeepingLogs(err error) error {
	f.removeDir = func() {}
	f.stop()
	return fmt.Errorf("%w (the processes' logs are kept in %s)", err, f.dir)
}

// workDir makes a temporary directory for one benchmark run and sends the process's component logs to
// DIR/bench.log, so the terminal keeps the table and the progress lines. The returned function removes it,
// after ending the log: agents still stopping would otherwise make klog create the file again and end the
// process (a 1,000-cluster run exited with status 2 after writing its figures).
func workDir(name string) (string, func(), error) {
	dir, err := os.MkdirTemp("", "flotilla-bench-"+name+"-")
	if err != nil {
		return "", nil, err
	}
	if err := logging.Setup(0, filepath.Join(dir, "bench.log")); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return dir, func() {
		logging.Stop()
		os.RemoveAll(dir)
	}, nil
}

// loadConfig reads a kubeconfig for a benchmark client, without client-side rate limits: the benchmark
// measures the control plane, not its own throttling.
func loadConfig(path string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = -1, 0
	return cfg, nil
}

// writeJSON writes v as indented JSON to path, when path is set.
func writeJSON(path string, v any) error {
	if path == "" {
		return nil
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
