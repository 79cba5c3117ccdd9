// Package tunnel lets the hub reach the API server of a Pull member that the hub cannot dial: the member's
// agent opens one outbound connection to the hub and the hub sends proxy requests through it.
//
// The agent (agent.go) asks the hub's API for an upgrade of `POST .../clusters/NAME/attach` with its client
// certificate; the hub's kube-apiserver authenticates it and checks RBAC (only the agent of NAME may create
// clusters/attach on NAME), and the hub (hub.go) checks again that the user is exactly NAME's current agent
// before it takes the connection. Once upgraded, the connection carries a yamux session in which the hub opens
// one stream per proxied connection and the agent serves each stream with a reverse proxy to its member's API
// server (member.go), with the agent's own member credential and the Impersonate-* headers the hub set. No
// address travels through the tunnel: whatever a stream asks for, it reaches that API server and nothing else.
//
// Both ends sit in this package so a reader sees the protocol whole.
package tunnel

import (
	"fmt"
	"io"
	"time"

	"github.com/hashicorp/yamux"
)

const (
	// Group and Version are the hub's aggregated API that serves the tunnel's connect subresource.
	Group   = "proxy.flotilla.io"
	Version = "v1alpha1"
	// Subresource is the connect subresource of clusters an agent opens its tunnel on. It is named attach,
	// not tunnel, because kube-apiserver treats a fixed list of subresources (attach, exec, log, portforward,
	// proxy) as long-running: any other one is cut by the hub's request timeout and holds a seat of API
	// Priority and Fairness for as long as it lasts, so a tunnel per member would use up the seats of the
	// level agents fall in.
	Subresource = "attach"
	// Protocol is the Upgrade header value of a tunnel request: after it, the connection speaks yamux.
	Protocol = "flotilla-tunnel"
)

// Path is the hub API path an agent opens cluster's tunnel on.
func Path(cluster string) string {
	return fmt.Sprintf("/apis/%s/%s/clusters/%s/%s", Group, Version, cluster, Subresource)
}

// keepAlive is how often each end pings the other: a peer that stopped answering (a frozen process, a
// dropped route) is noticed within about twice this, which is what bounds how long the hub keeps a dead
// session and the agent waits before it dials again.
const keepAlive = 5 * time.Second

func sessionConfig() *yamux.Config {
	cfg := yamux.DefaultConfig()
	cfg.KeepAliveInterval = keepAlive
	cfg.ConnectionWriteTimeout = 2 * keepAlive
	cfg.LogOutput = io.Discard
	return cfg
}
