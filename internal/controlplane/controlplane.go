// Package controlplane runs a real Kubernetes control plane inside the current process: etcd (embedded, or an
// external cluster), kube-apiserver and kube-controller-manager, with a PKI generated on first start and kept
// in a data directory. The hub uses it for its API; local member clusters use it too.
//
// Start order and readiness are explicit: etcd serves → kube-apiserver's /readyz passes → controllers start.
// Stop runs in reverse.
package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"
)

// Config describes one control plane.
type Config struct {
	// Name names the cluster in generated kubeconfigs.
	Name string
	// DataDir holds the PKI, etcd's data (when embedded) and logs. One process at a time may use it.
	DataDir string
	// BindAddress and SecurePort are where kube-apiserver listens; port 0 takes a free one (see URL).
	BindAddress net.IP
	SecurePort  int
	// AdvertiseAddress is the address clients are told to use; it is added to the serving certificate.
	AdvertiseAddress net.IP
	// TLSSANs are extra names or IPs for the serving certificate.
	TLSSANs []string
	// EtcdServers, when set, replaces the embedded etcd with an external cluster.
	EtcdServers []string
	// EtcdTLS is how kube-apiserver authenticates to EtcdServers and verifies them; unset, it uses their
	// URLs as they are. The embedded etcd always uses the control plane's own etcd PKI.
	EtcdTLS *EtcdTLS
	// EtcdPrefix is the key prefix of this control plane's objects in etcd.
	EtcdPrefix string
	// Controllers are the kube-controller-manager controllers to run ("*" for its defaults).
	Controllers []string
	// LeaderElect makes kube-controller-manager elect a leader, for several control planes on one etcd.
	LeaderElect bool
	// Scheduler runs kube-scheduler too: member clusters schedule pods, the hub does not.
	Scheduler bool
	// SharedControllerCredentials runs every kube-controller-manager controller as the cluster admin instead
	// of under a service account of its own. Creating those accounts and their tokens costs seconds at first
	// start; local member clusters skip it, the hub does not.
	SharedControllerCredentials bool
	// EncryptedResources are resources (resource.group) stored encrypted in etcd besides Secrets, such as
	// custom resources that carry copies of Secrets.
	EncryptedResources []string
	// UncachedResources are resources (resource.group) kube-apiserver serves from etcd without a watch cache:
	// kinds few clients watch, whose cache would hold every version written in the last minutes.
	UncachedResources []string
	// SigningDuration, when set, caps the lifetime of certificates the CSR signer issues.
	SigningDuration time.Duration
	// LocalServices are Services, keyed "namespace/name", that kube-apiserver's aggregator reaches at a
	// URL served by this process instead of through the Service: the hub serves its own aggregated API.
	LocalServices map[string]*url.URL
	// Profiling serves Go's profiles (/debug/pprof) on the secure port, to users RBAC allows that non-resource
	// URL (the admin), for measuring the control plane. Off by default: the profiles show the process's
	// goroutine stacks and allocation sites to whoever may read them, and a CPU profile costs CPU while it runs.
	Profiling bool
	// AnonymousPaths, when set, are the only paths kube-apiserver answers requests without credentials on
	// (as system:anonymous, for RBAC to decide); empty keeps kube-apiserver's default, anonymous requests
	// everywhere.
	AnonymousPaths []string
	// Authorizer, when set, is asked about every request before the Node and RBAC authorizers; what it has no
	// opinion on, they decide. The hub's authorizer of agents (registration.AgentAuthorizer) is one.
	Authorizer authorizer.Authorizer
	// AdmissionPlugins are the admission plugins kube-apiserver runs besides its default ones: for the hub, the
	// checks of internal/admission and the limit on events.
	AdmissionPlugins []AdmissionPlugin
	// WrapHandler, when set, wraps the handler that serves each request once it has passed the filters
	// (authentication, impersonation, authorization, priority and fairness): it sees the user the request
	// acts as and how long serving it takes. The hub times its users' writes with it (internal/headroom).
	WrapHandler func(http.Handler) http.Handler
	// Progress, if set, is told about each step as it completes.
	Progress func(step string)
}

// ControlPlane is a running control plane.
type ControlPlane struct {
	cfg  Config
	pki  PKI
	lock *os.File
	etcd *Etcd

	// URL is the https address of kube-apiserver.
	URL string
	// Admin is a kubeconfig for the cluster-admin identity (group system:masters).
	Admin *clientcmdapi.Config
	// EtcdServers and EtcdTLS are where kube-apiserver stores the cluster, and how it reaches them.
	EtcdServers []string
	EtcdTLS     *EtcdTLS

	stopControllers, stopAPIServer context.CancelFunc
	controllersDone, apiServerDone chan struct{}
	failed                         chan error
}

// Start brings the control plane up and returns once kube-apiserver is ready and the controllers run.
func Start(ctx context.Context, c Config) (_ *ControlPlane, err error) {
	if c.EtcdPrefix == "" {
		c.EtcdPrefix = "/registry"
	}
	if c.AdvertiseAddress == nil {
		c.AdvertiseAddress = net.IPv4(127, 0, 0, 1)
	}
	if c.Progress == nil {
		c.Progress = func(string) {}
	}
	if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
		return nil, err
	}
	// cp is not the named result: a failed start returns nil, and the deferred Stop needs what was started.
	cp := &ControlPlane{cfg: c, pki: PKI{Dir: filepath.Join(c.DataDir, "pki")}, failed: make(chan error, 3)}
	if cp.lock, err = lockDataDir(c.DataDir); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			cp.Stop()
		}
	}()
	// Opened before anything starts, so a taken port is one line rather than kube-apiserver's failure after
	// etcd came up, and held until kube-apiserver serves on it: port 0 takes a free port that no other process
	// can take in between.
	listener, err := listen(c.BindAddress, c.SecurePort)
	if err != nil {
		return nil, err
	}
	defer func() {
		if listener != nil { // not handed to kube-apiserver
			listener.Close()
		}
	}()
	c.SecurePort = listener.Addr().(*net.TCPAddr).Port
	c.Progress(fmt.Sprintf("%s %d", PortHeld, c.SecurePort))

	if err := cp.pki.Ensure(hostsFor(&c)); err != nil {
		return nil, fmt.Errorf("PKI in %s: %w", cp.pki.Dir, err)
	}
	if err := cp.pki.writeEncryptionConfig(c.EncryptedResources); err != nil {
		return nil, fmt.Errorf("PKI in %s: %w", cp.pki.Dir, err)
	}
	c.Progress("PKI ready in " + cp.pki.Dir)

	// A snapshot must not find the endpoint of an embedded etcd this directory no longer runs.
	if err := os.Remove(filepath.Join(c.DataDir, etcdEndpointFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	cp.EtcdServers, cp.EtcdTLS = c.EtcdServers, c.EtcdTLS
	if len(cp.EtcdServers) == 0 {
		ports, err := FreePorts(2)
		if err != nil {
			return nil, err
		}
		serverTLS, clientTLS := cp.pki.EtcdServerTLS(), cp.pki.EtcdClientTLS()
		cp.etcd, err = StartEtcd(EtcdConfig{
			Name:      embeddedEtcdName,
			Dir:       filepath.Join(c.DataDir, "etcd"),
			ClientURL: "https://127.0.0.1:" + strconv.Itoa(ports[0]),
			PeerURL:   "https://127.0.0.1:" + strconv.Itoa(ports[1]),
			LogFile:   filepath.Join(c.DataDir, "etcd.log"),
			TLS:       &serverTLS,
		})
		if err != nil {
			return nil, err
		}
		cp.EtcdServers, cp.EtcdTLS = []string{cp.etcd.ClientURL}, &clientTLS
		if err := writeFileAtomic(filepath.Join(c.DataDir, etcdEndpointFile), []byte(cp.etcd.ClientURL+"\n"), 0o600); err != nil {
			return nil, err
		}
		c.Progress("etcd serving at " + cp.etcd.ClientURL + " (TLS, client certificates of " + cp.pki.EtcdCACert() + ")")
	}

	host := c.AdvertiseAddress.String()
	if c.AdvertiseAddress.IsLoopback() || c.BindAddress.IsLoopback() {
		host = "127.0.0.1"
	}
	cp.URL = "https://" + net.JoinHostPort(host, strconv.Itoa(c.SecurePort))
	if cp.Admin, err = kubeconfigFor(c.Name, cp.URL, cp.pki, AdminUser); err != nil {
		return nil, err
	}

	apiCtx, stopAPIServer := context.WithCancel(context.WithoutCancel(ctx))
	cp.stopAPIServer, cp.apiServerDone = stopAPIServer, make(chan struct{})
	if len(c.AnonymousPaths) > 0 {
		if err := writeAuthenticationConfig(c.DataDir, c.AnonymousPaths); err != nil {
			return nil, err
		}
	}
	if configured(c.AdmissionPlugins) {
		if err := writeAdmissionConfig(c.DataDir, c.AdmissionPlugins); err != nil {
			return nil, err
		}
	}
	opts := apiserverOptions(&c, cp.pki, cp.EtcdServers, cp.EtcdTLS)
	opts.SecureServing.Listener, listener = listener, nil
	go func() {
		defer close(cp.apiServerDone)
		if err := runAPIServer(apiCtx, opts, &c); err != nil && apiCtx.Err() == nil {
			cp.failed <- fmt.Errorf("kube-apiserver: %w", err)
		}
	}()
	if err := cp.waitReady(ctx); err != nil {
		return nil, err
	}
	c.Progress("kube-apiserver ready at " + cp.URL)

	kcmUser := controllerManagerUser
	if c.SharedControllerCredentials {
		kcmUser = AdminUser
	}
	kcmKubeconfig, err := cp.writeComponentKubeconfig("controller-manager.kubeconfig", kcmUser)
	if err != nil {
		return nil, err
	}
	components := map[string]func(context.Context) error{
		"kube-controller-manager": func(ctx context.Context) error {
			return runControllerManager(ctx, &c, cp.pki, kcmKubeconfig)
		},
	}
	if c.Scheduler {
		schedulerKubeconfig, err := cp.writeComponentKubeconfig("scheduler.kubeconfig", schedulerUser)
		if err != nil {
			return nil, err
		}
		components["kube-scheduler"] = func(ctx context.Context) error {
			return runScheduler(ctx, cp.pki, schedulerKubeconfig)
		}
	}
	controllersCtx, stopControllers := context.WithCancel(context.WithoutCancel(ctx))
	cp.stopControllers, cp.controllersDone = stopControllers, make(chan struct{})
	var running sync.WaitGroup
	for name, run := range components {
		running.Go(func() {
			if err := run(controllersCtx); err != nil && controllersCtx.Err() == nil {
				cp.failed <- fmt.Errorf("%s: %w", name, err)
			}
		})
	}
	go func() {
		running.Wait()
		close(cp.controllersDone)
	}()
	c.Progress(fmt.Sprintf("kube-controller-manager started (controllers: %s)", strings.Join(c.Controllers, ",")))
	if c.Scheduler {
		c.Progress("kube-scheduler started")
	}
	return cp, nil
}

// writeComponentKubeconfig writes the kubeconfig of an in-process component's client identity into the PKI
// directory and returns its path.
func (cp *ControlPlane) writeComponentKubeconfig(name, user string) (string, error) {
	path := filepath.Join(cp.pki.Dir, name)
	cfg, err := kubeconfigFor(cp.cfg.Name, cp.URL, cp.pki, user)
	if err != nil {
		return "", err
	}
	return path, writeKubeconfig(path, cfg)
}

// RESTConfig returns a client configuration for the cluster-admin identity.
func (cp *ControlPlane) RESTConfig() (*rest.Config, error) {
	return clientcmd.NewDefaultClientConfig(*cp.Admin, nil).ClientConfig()
}

// ClientConfig returns a client configuration for user, an identity without groups whose certificate the
// cluster CA issues on first use (see PKI.EnsureClientCert).
func (cp *ControlPlane) ClientConfig(user string) (*rest.Config, error) {
	if err := cp.pki.EnsureClientCert(user); err != nil {
		return nil, err
	}
	cfg, err := kubeconfigFor(cp.cfg.Name, cp.URL, cp.pki, user)
	if err != nil {
		return nil, err
	}
	return clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
}

// WriteClientKubeconfig writes the kubeconfig of user (ClientConfig's identity) into the PKI directory as
// name and returns its path, for a component that takes a kubeconfig file.
func (cp *ControlPlane) WriteClientKubeconfig(name, user string) (string, error) {
	if err := cp.pki.EnsureClientCert(user); err != nil {
		return "", err
	}
	return cp.writeComponentKubeconfig(name, user)
}

// WriteAdminKubeconfig writes the cluster-admin kubeconfig to path, atomically.
func (cp *ControlPlane) WriteAdminKubeconfig(path string) error {
	return writeKubeconfig(path, cp.Admin)
}

// PKI returns the control plane's PKI.
func (cp *ControlPlane) PKI() PKI { return cp.pki }

// Failed delivers an error when a component stops on its own.
func (cp *ControlPlane) Failed() <-chan error { return cp.failed }

// Stop shuts the control plane down in order: controllers, kube-apiserver, etcd. It is safe to call on a
// control plane that only partly started.
func (cp *ControlPlane) Stop() {
	wait := func(done chan struct{}, what string) {
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			klog.Warningf("%s did not stop within 20s; going on", what)
		}
	}
	if cp.stopControllers != nil {
		cp.stopControllers()
		wait(cp.controllersDone, "controllers")
	}
	if cp.stopAPIServer != nil {
		cp.stopAPIServer()
		wait(cp.apiServerDone, "kube-apiserver")
	}
	if cp.etcd != nil {
		cp.etcd.Close()
	}
	if cp.lock != nil {
		cp.lock.Close()
	}
}

// waitReady polls kube-apiserver's /readyz until it passes, the server fails, or ctx ends.
func (cp *ControlPlane) waitReady(ctx context.Context) error {
	cfg, err := cp.RESTConfig()
	if err != nil {
		return err
	}
	cfg.Timeout = 5 * time.Second
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for kube-apiserver /readyz (last: %v): %w", last, ctx.Err())
		case err := <-cp.failed:
			return err
		case <-tick.C:
		}
		if _, last = client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); last == nil {
			return nil
		}
	}
}

// PortHeld begins the progress line Start prints once it holds kube-apiserver's port. A parent that picked
// that port with FreePorts for a child waits for the line before it starts anything else that asks for free
// ports: until the child binds it, the port is free to them too.
const PortHeld = "holding the API port"

// FreePorts asks the kernel for n distinct free TCP ports on the loopback interface.
func FreePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// listen opens kube-apiserver's port, failing with a clear message when another process listens on it.
func listen(ip net.IP, port int) (net.Listener, error) {
	host := "" // every interface, as kube-apiserver binds without an address
	if ip != nil {
		host = ip.String()
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("port %d is in use: another process listens on %s", port, addr)
		}
		return nil, fmt.Errorf("cannot listen on %s: %w", addr, err)
	}
	return l, nil
}

// ErrDataDirInUse is returned when another process holds a data directory.
var ErrDataDirInUse = errors.New("data directory is in use")
