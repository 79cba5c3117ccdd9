// Package devenv runs local member clusters: a real Kubernetes control plane (etcd, kube-apiserver,
// kube-controller-manager with its default controllers, kube-scheduler) in one process, with nodes and the
// kubelet's work simulated by kwok, so Deployments really become Available.
package devenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/flotilla-io/flotilla/internal/admission"
	"github.com/flotilla-io/flotilla/internal/controlplane"
)

// MemberOptions configure `flotilla dev member`.
type MemberOptions struct {
	// Name of the member cluster: its kubeconfig context and the prefix of its node names.
	Name string
	// DataDir holds the member's PKI, etcd data, logs and kubeconfig.
	DataDir string
	// Nodes is the number of simulated nodes; NodeCPU, NodeMemory and NodePods are each node's capacity.
	Nodes      int
	NodeCPU    string
	NodeMemory string
	NodePods   int
	// BindAddress and SecurePort are where the member's kube-apiserver listens; port 0 picks a free one.
	BindAddress string
	SecurePort  int
	// EtcdServers, when set, stores the member in an external etcd under EtcdPrefix instead of its own.
	EtcdServers []string
	EtcdPrefix  string

	cpu, memory resource.Quantity
}

// NewMemberOptions returns the defaults: three nodes of 32 CPUs, 256Gi and 110 pods each.
func NewMemberOptions() *MemberOptions {
	return &MemberOptions{Nodes: 3, NodeCPU: "32", NodeMemory: "256Gi", NodePods: 110, BindAddress: "127.0.0.1"}
}

// AddFlags binds the options to flags.
func (o *MemberOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Name, "name", o.Name, "name of the member cluster (a DNS label)")
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir, "directory for the member's PKI, etcd data, logs and kubeconfig (default $HOME/.flotilla/members/NAME)")
	fs.IntVar(&o.Nodes, "nodes", o.Nodes, "number of simulated nodes")
	fs.StringVar(&o.NodeCPU, "node-cpu", o.NodeCPU, "CPU capacity of each node")
	fs.StringVar(&o.NodeMemory, "node-memory", o.NodeMemory, "memory capacity of each node")
	fs.IntVar(&o.NodePods, "node-pods", o.NodePods, "pod capacity of each node")
	fs.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "IP address the member's API listens on")
	fs.IntVar(&o.SecurePort, "secure-port", o.SecurePort, "port the member's API listens on (0: a free port)")
	fs.StringSliceVar(&o.EtcdServers, "etcd-servers", o.EtcdServers, "external etcd (comma-separated URLs) instead of an embedded one")
	fs.StringVar(&o.EtcdPrefix, "etcd-prefix", o.EtcdPrefix, "key prefix of the member in an external etcd (default /NAME)")
}

// Validate checks every option and fills in derived defaults. It runs before anything starts.
func (o *MemberOptions) Validate(home string) error {
	var errs []error
	if o.Name == "" {
		errs = append(errs, errors.New("--name is required"))
	} else if msgs := validation.IsDNS1123Label(o.Name); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--name %q: %s", o.Name, strings.Join(msgs, "; ")))
	}
	if o.DataDir == "" && o.Name != "" {
		o.DataDir = filepath.Join(home, ".flotilla", "members", o.Name)
	}
	if o.Nodes < 1 || o.Nodes > 5000 {
		errs = append(errs, fmt.Errorf("--nodes %d: must be between 1 and 5000", o.Nodes))
	}
	var err error
	if o.cpu, err = resource.ParseQuantity(o.NodeCPU); err != nil || o.cpu.Sign() <= 0 {
		errs = append(errs, fmt.Errorf("--node-cpu %q: not a positive quantity", o.NodeCPU))
	}
	if o.memory, err = resource.ParseQuantity(o.NodeMemory); err != nil || o.memory.Sign() <= 0 {
		errs = append(errs, fmt.Errorf("--node-memory %q: not a positive quantity", o.NodeMemory))
	}
	if o.NodePods < 1 {
		errs = append(errs, fmt.Errorf("--node-pods %d: must be at least 1", o.NodePods))
	}
	if net.ParseIP(o.BindAddress) == nil {
		errs = append(errs, fmt.Errorf("--bind-address %q: not an IP address", o.BindAddress))
	}
	if o.SecurePort < 0 || o.SecurePort > 65535 {
		errs = append(errs, fmt.Errorf("--secure-port %d: must be between 0 and 65535", o.SecurePort))
	}
	if o.EtcdPrefix == "" {
		o.EtcdPrefix = "/" + o.Name
	}
	errs = append(errs, controlplane.ValidateEtcdFlags(o.EtcdServers, o.EtcdPrefix)...)
	return errors.Join(errs...)
}

// Member is a running member cluster.
type Member struct {
	// Kubeconfig is the path of the member's admin kubeconfig.
	Kubeconfig string
	// URL is the member's API address.
	URL string

	controlPlane *controlplane.ControlPlane
	stopKubelets context.CancelFunc
}

// StartMember brings a member cluster up and returns once a Deployment can become Available in it; only then
// is DataDir/kubeconfig written.
func StartMember(ctx context.Context, o *MemberOptions, progress func(string)) (_ *Member, err error) {
	m := &Member{Kubeconfig: filepath.Join(o.DataDir, "kubeconfig")}
	defer func() {
		if err != nil {
			m.Stop()
		}
	}()
	cfg := controlplane.Config{
		Name:        o.Name,
		DataDir:     o.DataDir,
		BindAddress: net.ParseIP(o.BindAddress),
		SecurePort:  o.SecurePort,
		Controllers: []string{"*"},
		Scheduler:   true,
		Progress:    progress,
		// A local cluster for tests and demos: start fast rather than give each controller its own account.
		SharedControllerCredentials: true,
		// Events are rate-limited per namespace, as on the hub.
		AdmissionPlugins: []controlplane.AdmissionPlugin{admission.EventRateLimit()},
	}
	if len(o.EtcdServers) > 0 {
		cfg.EtcdServers, cfg.EtcdPrefix = o.EtcdServers, o.EtcdPrefix
	}
	if m.controlPlane, err = controlplane.Start(ctx, cfg); err != nil {
		return nil, err
	}
	m.URL = m.controlPlane.URL
	restConfig, err := m.controlPlane.RESTConfig()
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, err
	}
	if err := ensureNodes(ctx, kube, o.Name, o.Nodes, nodeSpec{cpu: o.cpu, memory: o.memory, pods: o.NodePods}); err != nil {
		return nil, err
	}
	kwokKubeconfig := filepath.Join(o.DataDir, "pki", "kwok.kubeconfig")
	if err := m.controlPlane.WriteAdminKubeconfig(kwokKubeconfig); err != nil {
		return nil, err
	}
	kubeletCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	m.stopKubelets = stop
	// kwok holds each node's Lease; under the identity of the last run it renews them at once.
	kwokID, err := controlplane.StableIdentity(o.DataDir, "kwok-id")
	if err != nil {
		return nil, err
	}
	if err := startKubelets(kubeletCtx, kwokKubeconfig, kwokID, o.Name); err != nil {
		return nil, err
	}
	progress(fmt.Sprintf("%d simulated nodes (%s CPU, %s memory, %d pods each)", o.Nodes, o.NodeCPU, o.NodeMemory, o.NodePods))

	if err := waitWorkloadsRun(ctx, kube); err != nil {
		return nil, err
	}
	progress("a probe Deployment became Available")
	if err := m.controlPlane.WriteAdminKubeconfig(m.Kubeconfig); err != nil {
		return nil, err
	}
	return m, nil
}

// Failed delivers an error when a component stops on its own.
func (m *Member) Failed() <-chan error { return m.controlPlane.Failed() }

// Stop shuts the member down: kwok first, then the control plane.
func (m *Member) Stop() {
	if m.stopKubelets != nil {
		m.stopKubelets()
	}
	if m.controlPlane != nil {
		m.controlPlane.Stop()
	}
}
