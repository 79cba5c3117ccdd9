package tunnel

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/hashicorp/yamux"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	proxyv1alpha1 "github.com/flotilla-io/flotilla/api/proxy/v1alpha1"
)

// Backoff bounds of the agent's redials: the first comes after minBackoff, each failed one doubles the wait up
// to maxBackoff, and a tunnel that stayed open for maxBackoff starts over from minBackoff.
const (
	minBackoff = time.Second
	maxBackoff = 30 * time.Second
)

// Agent keeps one Pull cluster's tunnel to the hub open.
type Agent struct {
	// Cluster is the cluster the agent serves.
	Cluster string
	// HubConfig returns the agent's current hub credential; it is read again for each dial, so a renewed
	// certificate is used from the next tunnel on.
	HubConfig func() (*rest.Config, error)
	// Member serves each stream the hub opens (MemberProxy).
	Member http.Handler
}

// Run keeps the tunnel open until ctx ends, dialing again with backoff whenever it closes or cannot open.
func (a *Agent) Run(ctx context.Context) {
	log := klog.FromContext(ctx).WithValues("cluster", a.Cluster)
	delay := minBackoff
	for ctx.Err() == nil {
		opened := time.Now()
		err := a.serveOnce(ctx, func() { log.Info("tunnel to the hub open") })
		if ctx.Err() != nil {
			return
		}
		if time.Since(opened) >= maxBackoff {
			delay = minBackoff
		}
		log.Info("tunnel to the hub closed; dialing again", "after", delay, "reason", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, maxBackoff)
	}
}

// serveOnce opens one tunnel and serves the hub's streams on it until it closes or ctx ends.
func (a *Agent) serveOnce(ctx context.Context, opened func()) error {
	session, err := a.Dial(ctx)
	if err != nil {
		return err
	}
	opened()
	stop := context.AfterFunc(ctx, func() { session.Close() })
	defer stop()
	server := &http.Server{Handler: a.Member, ReadHeaderTimeout: 30 * time.Second}
	err = server.Serve(session)
	session.Close()
	return err
}

// Dial opens one tunnel: it asks the hub to upgrade POST proxyv1alpha1.ClusterAttachPath(cluster) to Protocol
// and starts the agent's end of a yamux session on the connection: the hub opens streams, the agent accepts
// them.
func (a *Agent) Dial(ctx context.Context) (*yamux.Session, error) {
	cfg, err := a.HubConfig()
	if err != nil {
		return nil, err
	}
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, err
	}
	if tlsConfig != nil {
		// An upgrade exists only in HTTP/1.1; the hub's API server would otherwise choose HTTP/2.
		tlsConfig.NextProtos = []string{"http/1.1"}
	}
	base := utilnet.SetOldTransportDefaults(&http.Transport{TLSClientConfig: tlsConfig})
	defer base.CloseIdleConnections()
	rt, err := rest.HTTPWrappersForConfig(cfg, base)
	if err != nil {
		return nil, err
	}
	url := strings.TrimSuffix(cfg.Host, "/") + proxyv1alpha1.ClusterAttachPath(a.Cluster)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", Protocol)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("the hub refused the tunnel: %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	conn, ok := resp.Body.(io.ReadWriteCloser)
	if !ok {
		resp.Body.Close()
		return nil, fmt.Errorf("the hub's upgraded connection is not writable")
	}
	session, err := yamux.Server(conn, sessionConfig())
	if err != nil {
		conn.Close()
		return nil, err
	}
	return session, nil
}
