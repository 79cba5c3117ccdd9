package proxy

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	restclient "k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	proxyv1alpha1 "github.com/flotilla-io/flotilla/api/proxy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/tunnel"
)

// attachREST serves clusters/NAME/attach, where the agent of Pull cluster NAME opens its tunnel to the hub
// (internal/tunnel). The hub's RBAC has let only NAME's agent through; tunnel.Authorize checks again that
// the caller is exactly that agent before the connection is taken.
type attachREST struct {
	hub     client.Reader
	tunnels *tunnel.Registry
}

var _ rest.Connecter = &attachREST{}

func (r *attachREST) New() runtime.Object { return &proxyv1alpha1.ClusterProxyOptions{} }
func (r *attachREST) Destroy()            {}

// NewConnectOptions: the request carries nothing but the upgrade.
func (r *attachREST) NewConnectOptions() (runtime.Object, bool, string) { return nil, false, "" }

// ConnectMethods: the agent upgrades a POST.
func (r *attachREST) ConnectMethods() []string { return []string{http.MethodPost} }

// Connect checks the caller and returns the handler that takes the connection as NAME's tunnel.
func (r *attachREST) Connect(ctx context.Context, name string, _ runtime.Object, responder rest.Responder) (http.Handler, error) {
	caller, ok := request.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewUnauthorized("no authenticated user")
	}
	grant, err := tunnel.Authorize(ctx, r.hub, caller, name)
	if err != nil {
		return nil, err
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if err := r.tunnels.Serve(w, req, name, grant); err != nil {
			responder.Error(err)
		}
	}), nil
}

// PullBackend reaches Pull members through the tunnels their agents hold open to this hub process.
type PullBackend struct {
	Tunnels *tunnel.Registry

	mu      sync.Mutex
	targets map[string]*Target
}

// For returns the Target of a Pull cluster, or 503 when its agent has no tunnel open that still stands for
// the Cluster as it is (tunnel.Registry.Usable, checked before each use). Targets are kept per
// cluster, so their connection pools (streams of the tunnel) serve request after request.
func (b *PullBackend) For(_ context.Context, cluster *clusterv1alpha1.Cluster) (*Target, error) {
	if !b.Tunnels.Usable(cluster.Name, cluster) {
		return nil, apierrors.NewServiceUnavailable((&tunnel.NotConnectedError{Cluster: cluster.Name}).Error())
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if t := b.targets[cluster.Name]; t != nil {
		return t, nil
	}
	// The host is a placeholder: the agent's end of the tunnel reaches its member's API server whatever the
	// request names, over plain HTTP inside the hub's TLS connection with the agent.
	t, err := TargetFor(&restclient.Config{Host: fmt.Sprintf("http://%s.tunnel.invalid", cluster.Name), Dial: b.Tunnels.DialContext(cluster.Name)})
	if err != nil {
		return nil, err
	}
	if b.targets == nil {
		b.targets = map[string]*Target{}
	}
	b.targets[cluster.Name] = t
	return t, nil
}
