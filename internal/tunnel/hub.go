package tunnel

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/yamux"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/user"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	proxyv1alpha1 "github.com/flotilla-io/flotilla/api/proxy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/registration"
)

// Registry holds the hub's end of each Pull cluster's tunnel: at most one session per cluster, the latest one
// an agent opened, with what it was authorized for.
type Registry struct {
	mu       sync.Mutex
	sessions map[string]*session
	watchers []func(cluster string)
}

// Grant is what a tunnel was opened under: the agent user, the Cluster (by UID: a Cluster deleted and created
// again under the same name is another one) and when the agent's certificate expires (zero: not known).
type Grant struct {
	User       user.Info
	ClusterUID types.UID
	Expires    time.Time
}

// GrantFor is the grant of u's tunnel to c, which Authorize allowed.
func GrantFor(u user.Info, c *clusterv1alpha1.Cluster) Grant {
	expires, _ := time.Parse(time.RFC3339, c.Annotations[clusterv1alpha1.AnnotationAgentCertificateExpires])
	return Grant{User: u, ClusterUID: c.UID, Expires: expires}
}

type session struct {
	*yamux.Session
	grant Grant
}

// NewRegistry returns a registry with no tunnels.
func NewRegistry() *Registry {
	return &Registry{sessions: map[string]*session{}}
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

// Usable reports whether cluster's tunnel is open and still stands for c, the Cluster as it is now (nil: gone):
// its agent is still c's current agent, c is the Cluster it was opened for and still a Pull cluster, and the
// agent's certificate has not expired. A tunnel that no longer stands is closed, so the agent, if it still
// may, opens a new one under its current identity.
func (r *Registry) Usable(cluster string, c *clusterv1alpha1.Cluster) bool {
	r.mu.Lock()
	s := r.sessions[cluster]
	r.mu.Unlock()
	if s == nil || s.IsClosed() {
		return false
	}
	g := s.grant
	if refusal(g.User, c) == "" && c.UID == g.ClusterUID && (g.Expires.IsZero() || time.Now().Before(g.Expires)) {
		return true
	}
	s.Close()
	return false
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

var clustersResource = schema.GroupResource{Group: proxyv1alpha1.GroupName, Resource: proxyv1alpha1.ResourceClusters}

// Authorize returns the grant of u's tunnel when u may open cluster's tunnel: cluster is a Pull cluster and
// u is its current agent (registration.CurrentAgentUser), in the agents' group. The hub's API server lets
// only that user through already (registration.AgentAuthorizer); this check keeps a mistaken role binding
// from handing a tunnel to anyone else.
func Authorize(ctx context.Context, hub client.Reader, u user.Info, cluster string) (Grant, error) {
	c := &clusterv1alpha1.Cluster{}
	if err := hub.Get(ctx, client.ObjectKey{Name: cluster}, c); apierrors.IsNotFound(err) {
		c = nil
	} else if err != nil {
		return Grant{}, apierrors.NewInternalError(fmt.Errorf("reading cluster %s: %w", cluster, err))
	}
	if why := refusal(u, c); why != "" {
		return Grant{}, apierrors.NewForbidden(clustersResource, cluster, fmt.Errorf("user %q may not open the tunnel of cluster %s: %s", u.GetName(), cluster, why))
	}
	return GrantFor(u, c), nil
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

// Serve takes req, an upgrade to Protocol, as cluster's tunnel under grant, replacing an earlier one, and
// returns when the tunnel closes, at the latest when the agent's certificate expires. The caller has checked
// who asks (Authorize). Only the hub opens streams: one the agent opens is closed at once, so an agent cannot
// fill the hub with streams nobody reads.
func (r *Registry) Serve(w http.ResponseWriter, req *http.Request, cluster string, grant Grant) error {
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
	ys, err := yamux.Client(&bufferedConn{Conn: conn, r: buffered.Reader}, sessionConfig())
	if err != nil {
		conn.Close()
		return nil
	}
	s := &session{Session: ys, grant: grant}
	go func() {
		for {
			stream, err := ys.AcceptStream()
			if err != nil {
				return
			}
			stream.Close()
		}
	}()
	if !grant.Expires.IsZero() {
		expiry := time.AfterFunc(time.Until(grant.Expires), func() { ys.Close() })
		defer expiry.Stop()
	}
	r.open(cluster, s)
	<-ys.CloseChan()
	r.closed(cluster, s)
	return nil
}

func (r *Registry) open(cluster string, s *session) {
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

func (r *Registry) closed(cluster string, s *session) {
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
	var sessions []*session
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
