package devenv

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/clusterset"
	"github.com/flotilla-io/flotilla/internal/controlplane"
	"github.com/flotilla-io/flotilla/internal/process"
	"github.com/flotilla-io/flotilla/internal/registration"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

// UpOptions configure `flotilla up`.
type UpOptions struct {
	// Members is the number of local member clusters.
	Members int
	// DataDir holds the hub, the members, the agents and the kubeconfigs.
	DataDir string
	// HubPort is the hub API's port.
	HubPort int
	// Mode is how members join: pull (agents), push, or mixed (every third member push).
	Mode string
	// MemberArgs are extra flags for every `flotilla dev member`, such as --node-pods.
	MemberArgs []string
	// HubArgs are extra flags for `flotilla hub`, such as --cluster-grace-period.
	HubArgs []string
	// ClusterSetMode, when set, is the hub's cluster-set mode (--clusterset-mode). Unset, a new fleet's hub
	// is Open, a single user's fleet, and a fleet started again keeps the mode its hub recorded (an
	// administrator may have switched it).
	ClusterSetMode clusterset.Mode
	// MemberNice, when above zero, is the niceness (up to 19) the members and their agents run at, so that the
	// hub's process gets the CPU first, as a hub on cores of its own would (docs/benchmarks.md).
	MemberNice int
}

// Join modes of UpOptions.Mode.
const (
	ModePull  = "pull"
	ModePush  = "push"
	ModeMixed = "mixed"
)

// Validate checks the options before anything starts.
func (o *UpOptions) Validate(home string) error {
	if o.Members < 1 || o.Members > 20 {
		return fmt.Errorf("--members %d: must be between 1 and 20", o.Members)
	}
	if o.MemberNice < 0 || o.MemberNice > 19 {
		return fmt.Errorf("--member-nice %d: must be between 0 and 19", o.MemberNice)
	}
	if o.HubPort < 1 || o.HubPort > 65535 {
		return fmt.Errorf("--hub-port %d: must be between 1 and 65535", o.HubPort)
	}
	switch o.Mode {
	case "":
		o.Mode = ModeMixed
	case ModePull, ModePush, ModeMixed:
	default:
		return fmt.Errorf("--mode %q: must be pull, push or mixed", o.Mode)
	}
	if o.DataDir == "" {
		o.DataDir = filepath.Join(home, ".flotilla", "up")
	}
	if o.ClusterSetMode != "" {
		if err := o.ClusterSetMode.Validate(); err != nil {
			return fmt.Errorf("--clusterset-mode: %w", err)
		}
	}
	return nil
}

// locations gives each member a region and zone, so placement has something to choose by.
var locations = []struct{ region, zone string }{
	{"eu-west-1", "eu-west-1a"}, {"eu-west-1", "eu-west-1b"}, {"us-east-1", "us-east-1a"}, {"ap-south-1", "ap-south-1a"},
}

// Environment is a running local environment.
type Environment struct {
	// HubKubeconfig is DataDir/hub.kubeconfig; MemberKubeconfigs maps each member to its kubeconfig.
	HubKubeconfig     string
	MemberKubeconfigs map[string]string
	// Hub is a client for the hub.
	Hub client.Client

	processes []*process.Process
}

// MemberName is the name of member i (from 1).
func MemberName(i int) string { return "member" + strconv.Itoa(i) }

// Up starts a hub and members as child processes of this binary, joins the members (as o.Mode says; in mixed
// mode every third one in push mode, the others through agents), and returns once every cluster is Ready. A second Up on the same
// DataDir picks everything up where it was.
func Up(ctx context.Context, o *UpOptions, progress func(string)) (_ *Environment, err error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	env := &Environment{HubKubeconfig: filepath.Join(o.DataDir, "hub.kubeconfig"), MemberKubeconfigs: map[string]string{}}
	defer func() {
		if err != nil {
			env.Stop()
		}
	}()
	start := func(name, dir string, args ...string) (*process.Process, error) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
		p, err := process.Start(name, filepath.Join(dir, name+".out"), nil, self, args...)
		if err != nil {
			return nil, err
		}
		env.processes = append(env.processes, p)
		if name != "hub" && o.MemberNice > 0 {
			if err := p.Renice(o.MemberNice); err != nil {
				return nil, fmt.Errorf("niceness %d for %s: %w", o.MemberNice, name, err)
			}
		}
		return p, nil
	}
	hubDir := filepath.Join(o.DataDir, "hub")
	mode := o.ClusterSetMode
	if _, err := os.Stat(hubDir); mode == "" && errors.Is(err, fs.ErrNotExist) {
		mode = clusterset.Open
	}
	hubArgs := []string{"hub", "--data-dir", hubDir, "--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(o.HubPort), "--dashboard-port", "0", "--allow-local-member-endpoints", "--allow-local-chart-repositories", "--proxy-system-groups", "system:masters"}
	if mode != "" {
		hubArgs = append(hubArgs, "--clusterset-mode", string(mode))
	}
	hubArgs = append(hubArgs, o.HubArgs...)
	hub, err := start("hub", hubDir, hubArgs...)
	if err != nil {
		return nil, err
	}
	// The members' etcds take free ports: the hub's must be taken first.
	if err := process.WaitFor(ctx, hub, controlplane.PortHeld); err != nil {
		return nil, err
	}
	members := make([]*process.Process, o.Members)
	for i := range o.Members {
		name := MemberName(i + 1)
		env.MemberKubeconfigs[name] = filepath.Join(o.DataDir, "members", name+".kubeconfig")
		dir := filepath.Join(o.DataDir, "members", name)
		args := append([]string{"dev", "member", "--name", name, "--data-dir", dir}, o.MemberArgs...)
		if members[i], err = start(name, dir, args...); err != nil {
			return nil, err
		}
	}
	if err := process.WaitFor(ctx, hub, "hub ready"); err != nil {
		return nil, err
	}
	if err := copyFile(filepath.Join(hubDir, "admin.kubeconfig"), env.HubKubeconfig); err != nil {
		return nil, err
	}
	progress("hub ready at https://127.0.0.1:" + strconv.Itoa(o.HubPort))
	hubConfig, err := clientcmd.BuildConfigFromFlags("", env.HubKubeconfig)
	if err != nil {
		return nil, err
	}
	if env.Hub, err = client.New(hubConfig, client.Options{Scheme: scheme.New()}); err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(hubConfig)
	if err != nil {
		return nil, err
	}
	hashes, err := registration.CAHashes(hubConfig.CAData)
	if err != nil {
		return nil, err
	}

	var wg sync.WaitGroup
	errs := make([]error, o.Members)
	for i := range o.Members {
		wg.Go(func() {
			errs[i] = env.joinMember(ctx, o, i, members[i], start, kube, hubConfig.Host, hashes, progress)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := env.waitReady(ctx, o.Members); err != nil {
		return nil, err
	}
	progress(fmt.Sprintf("%d members joined and Ready", o.Members))
	return env, nil
}

// joinMember waits for member i and joins it in push mode or through an agent (restarted from its
// credential when it joined before).
func (env *Environment) joinMember(ctx context.Context, o *UpOptions, i int, member *process.Process,
	start func(name, dir string, args ...string) (*process.Process, error), kube kubernetes.Interface, hubURL string, hashes []string,
	progress func(string)) error {
	name := MemberName(i + 1)
	if err := process.WaitFor(ctx, member, "member "+name+" ready"); err != nil {
		return err
	}
	kubeconfig := env.MemberKubeconfigs[name]
	if err := copyFile(filepath.Join(o.DataDir, "members", name, "kubeconfig"), kubeconfig); err != nil {
		return err
	}
	loc := locations[i%len(locations)]
	labels := "environment=dev,member=" + name
	if o.Mode == ModePush || o.Mode == ModeMixed && (i+1)%3 == 0 {
		cfg, err := clientcmd.LoadFromFile(kubeconfig)
		if err != nil {
			return err
		}
		memberConfig, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
		if err != nil {
			return err
		}
		memberKube, err := kubernetes.NewForConfig(memberConfig)
		if err != nil {
			return err
		}
		id, err := registration.ClusterID(ctx, memberKube)
		if err != nil {
			return err
		}
		if _, err := registration.JoinPush(ctx, env.Hub, registration.PushRequest{
			ClusterName: name, ClusterID: id, Kubeconfig: cfg,
			Labels: map[string]string{"environment": "dev", "member": name}, Provider: "local", Region: loc.region, Zones: []string{loc.zone},
		}); err != nil {
			return err
		}
		progress(name + " joined (push)")
		return nil
	}
	agentDir := filepath.Join(o.DataDir, "agents", name)
	args := []string{"agent", "--agent-data-dir", agentDir, "--cluster-kubeconfig", kubeconfig}
	joined, err := registration.NewCredential(agentDir).Exists()
	if err != nil {
		return err
	}
	if !joined {
		// Each member gets a token of its own that allows exactly its name, labels and location, spent by
		// its join.
		token, err := registration.CreateToken(ctx, kube, time.Hour, "flotilla up "+name, registration.Grant{
			ClusterName: name, SingleUse: true, Labels: map[string]string{"environment": "dev", "member": name},
			Provider: "local", Region: loc.region, Zones: []string{loc.zone},
		})
		if err != nil {
			return err
		}
		args = []string{"join", hubURL, "--token", token.String(), "--ca-cert-hash", strings.Join(hashes, ","), "--cluster-name", name,
			"--cluster-kubeconfig", kubeconfig, "--agent-data-dir", agentDir, "--labels", labels,
			"--provider", "local", "--region", loc.region, "--zone", loc.zone}
	}
	agent, err := start("agent-"+name, agentDir, args...)
	if err != nil {
		return err
	}
	if err := process.WaitFor(ctx, agent, "reporting to the hub"); err != nil {
		return err
	}
	progress(name + " joined (pull)")
	return nil
}

func (env *Environment) waitReady(ctx context.Context, members int) error {
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		for i := range members {
			c := &clusterv1alpha1.Cluster{}
			if err := env.Hub.Get(ctx, client.ObjectKey{Name: MemberName(i + 1)}, c); err != nil {
				return false, nil
			}
			if !meta.IsStatusConditionTrue(c.Status.Conditions, clusterv1alpha1.ClusterConditionReady) {
				return false, nil
			}
		}
		return true, nil
	})
}

// Processes returns the fleet's processes: "hub", each member by name, and "agent-" + member name.
func (env *Environment) Processes() []*process.Process { return env.processes }

// Failed returns the first child that exited, or nil.
func (env *Environment) Failed() *process.Process {
	for _, p := range env.processes {
		if p.Exited() {
			return p
		}
	}
	return nil
}

// Stop stops the agents and members, then the hub.
func (env *Environment) Stop() {
	var wg sync.WaitGroup
	for i := len(env.processes) - 1; i >= 0; i-- {
		p := env.processes[i]
		if p.Name == "hub" {
			continue
		}
		wg.Go(func() { _ = p.Stop(30 * time.Second) })
	}
	wg.Wait()
	for _, p := range env.processes {
		if p.Name == "hub" {
			_ = p.Stop(30 * time.Second)
		}
	}
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o600)
}
