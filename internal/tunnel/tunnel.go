// Package tunnel lets the hub reach the API server of a Pull member that the hub cannot dial: the member's
// agent opens one outbound connection to the hub and the hub sends proxy requests through it.
//
// The agent (agent.go) asks the hub's API for an upgrade of `POST .../clusters/NAME/attach` (the
// proxyv1alpha1.SubresourceAttach of the hub's proxy group) with its client
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
	"io"
	"time"

	"github.com/hashicorp/yamux"
)

// Protocol is the Upgrade header value of a tunnel request (to proxyv1alpha1.ClusterAttachPath): after it,
// the connection speaks yamux.
const Protocol = "flotilla-tunnel"

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
