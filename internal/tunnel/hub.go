package tunnel

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/hashicorp/yamux"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/registration"
)

// Registry holds the hub's end of each Pull cluster's tunnel: at most one session per cluster, the latest one
// an agent opened.
type Registry struct {
	mu       sync.Mutex
	sessions map[string]*yamux.Session
	watchers []func(cluster string)
}

// NewRegistry returns a registry with no tunnels.
func NewRegistry() *Registry {
	return &Registry{sessions: map[string]*yamux.Session{}}
}

// Notify calls f with a cluster's name each time its tunnel connects or closes. f must not block.
func (r *Registry) Notify(f func(cluster string)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.watchers = append(r.watchers, f)
}

// Connected reports whether cluster has an open tunnel.
func (r *Registry) Connected(cluster string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.sessions[cluster]
	return s != nil && !s.IsClosed()
}

// NotConnectedError says a cluster has no open tunnel: its agent is not running, cannot reach the hub, or
// reached another hub.
type NotConnectedError struct{ Cluster string }

func (e *NotConnectedError) Error() string {
	return fmt.Sprintf("no tunnel for cluster %s: its agent is not connected to this hub", e.Cluster)
}

// DialContext opens a connection to cluster's API server through its tunnel. network and address are
// ignored: the agent's end serves its member's API server and nothing else.
func (r *Registry) DialContext(cluster string) func(ctx context.Context, network, address string) (net.Conn, error) {
	return func(ctx context.Context, _, _ string) (net.Conn, error) {
		r.mu.Lock()
		s := r.sessions[cluster]
		r.mu.Unlock()
		if s == nil || s.IsClosed() {
			return nil, &NotConnectedError{Cluster: cluster}
		}
		type result struct {
			conn net.Conn
			err  error
		}
		done := make(chan result, 1)
		go func() {
			conn, err := s.Open()
			done <- result{conn, err}
		}()
		select {
		case res := <-done:
			if res.err != nil {
				return nil, fmt.Errorf("cluster %s: opening a stream through its tunnel: %w", cluster, res.err)
			}
			return res.conn, nil
		case <-ctx.Done():
			go func() {
				if res := <-done; res.conn != nil {
					res.conn.Close()
				}
			}()
			return nil, ctx.Err()
		}
	}
}

var clustersResource = schema.GroupResource{Group: Group, Resource: "clusters"}

// Authorize returns nil when u may open cluster's tunnel: cluster is a Pull cluster and u is its current
// agent (registration.CurrentAgentUser), in the agents' group. The hub's API server lets only that user
// through already (registration.AgentAuthorizer); this check keeps a mistaken role binding from handing a
// tunnel to anyone else.
func Authorize(ctx context.Context, hub client.Reader, u user.Info, cluster string) error {
	c := &clusterv1alpha1.Cluster{}
	if err := hub.Get(ctx, client.ObjectKey{Name: cluster}, c); apierrors.IsNotFound(err) {
		c = nil
	} else if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("reading cluster %s: %w", cluster, err))
	}
	if why := refusal(u, c); why != "" {
		return apierrors.NewForbidden(clustersResource, cluster, fmt.Errorf("user %q may not open the tunnel of cluster %s: %s", u.GetName(), cluster, why))
	}
	return nil
}

// refusal says why u may not open the tunnel of c (nil: no such cluster), or "" when it may.
func refusal(u user.Info, c *clusterv1alpha1.Cluster) string {
	switch {
	case c == nil:
		return "no such cluster"
	case c.Spec.SyncMode != clusterv1alpha1.Pull:
		return "it is not a Pull cluster"
	case c.DeletionTimestamp != nil:
		return "it is being removed"
	case u.GetName() != registration.CurrentAgentUser(c):
		return "only its current agent may"
	case !inGroup(u, registration.AgentGroup):
		return "not in group " + registration.AgentGroup
	}
	return ""
}

func inGroup(u user.Info, group string) bool {
	for _, g := range u.GetGroups() {
		if g == group {
			return true
		}
	}
	return false
}

// Serve takes req, an upgrade to Protocol, as cluster's tunnel, replacing an earlier one, and returns when
// the tunnel closes. The caller has checked who asks (Authorize).
func (r *Registry) Serve(w http.ResponseWriter, req *http.Request, cluster string) error {
	if !strings.EqualFold(req.Header.Get("Upgrade"), Protocol) || !strings.Contains(strings.ToLower(req.Header.Get("Connection")), "upgrade") {
		return apierrors.NewBadRequest(fmt.Sprintf("a tunnel request must upgrade the connection to %s", Protocol))
	}
	hijacker, ok := w.(http.Hijacker)
	if !ok {
		return apierrors.NewInternalError(fmt.Errorf("the connection cannot be taken over (HTTP/2?); the agent must use HTTP/1.1"))
	}
	conn, buffered, err := hijacker.Hijack()
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if _, err := fmt.Fprintf(conn, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n", Protocol); err != nil {
		conn.Close()
		return nil
	}
	session, err := yamux.Client(&bufferedConn{Conn: conn, r: buffered.Reader}, sessionConfig())
	if err != nil {
		conn.Close()
		return nil
	}
	r.open(cluster, session)
	<-session.CloseChan()
	r.closed(cluster, session)
	return nil
}

func (r *Registry) open(cluster string, s *yamux.Session) {
	r.mu.Lock()
	old := r.sessions[cluster]
	r.sessions[cluster] = s
	watchers := r.watchers
	r.mu.Unlock()
	if old != nil {
		old.Close()
	}
	for _, f := range watchers {
		f(cluster)
	}
}

func (r *Registry) closed(cluster string, s *yamux.Session) {
	r.mu.Lock()
	current := r.sessions[cluster] == s
	if current {
		delete(r.sessions, cluster)
	}
	watchers := r.watchers
	r.mu.Unlock()
	if current {
		for _, f := range watchers {
			f(cluster)
		}
	}
}

// Close closes every tunnel; agents dial again.
func (r *Registry) Close() {
	r.mu.Lock()
	var sessions []*yamux.Session
	for _, s := range r.sessions {
		sessions = append(sessions, s)
	}
	r.mu.Unlock()
	for _, s := range sessions {
		s.Close()
	}
}

// bufferedConn reads first what the HTTP server had buffered past the upgrade request.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
