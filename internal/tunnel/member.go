package tunnel

import (
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
	"k8s.io/klog/v2"
)

// MemberProxy returns the handler the agent serves each tunnel stream with: a reverse proxy to the member's
// API server (member's host) with the agent's own member credential, the way `kubectl proxy` forwards,
// upgrades (exec, port-forward, attach) included. The request's own host is ignored, so nothing but that API
// server is reachable through the tunnel. Headers pass as they came, Impersonate-* ones included: the hub's
// proxy sets them for its caller, and the member's RBAC decides what that user may do; the agent's member
// credential therefore needs the rights of registration.ProxyImpersonation.
func MemberProxy(member *rest.Config) (http.Handler, error) {
	host := member.Host
	if !strings.HasSuffix(host, "/") {
		host += "/"
	}
	target, err := url.Parse(host)
	if err != nil {
		return nil, err
	}
	rt, err := rest.TransportFor(withoutTimeout(member))
	if err != nil {
		return nil, err
	}
	upgrade, err := upgradeTransport(member)
	if err != nil {
		return nil, err
	}
	h := proxy.NewUpgradeAwareHandler(target, rt, false, false, responder{})
	h.UpgradeTransport = upgrade
	h.UseRequestLocation = true
	h.UseLocationHost = true
	return h, nil
}

// withoutTimeout drops the agent's per-request timeout: proxied watches and streams last as long as the
// caller keeps them.
func withoutTimeout(c *rest.Config) *rest.Config {
	c = rest.CopyConfig(c)
	c.Timeout = 0
	return c
}

// upgradeTransport dials the member for upgrade requests over HTTP/1.1 with the agent's credential, as
// `kubectl proxy` does.
func upgradeTransport(member *rest.Config) (proxy.UpgradeRequestRoundTripper, error) {
	cfg, err := withoutTimeout(member).TransportConfig()
	if err != nil {
		return nil, err
	}
	tlsConfig, err := transport.TLSConfigFor(cfg)
	if err != nil {
		return nil, err
	}
	rt := utilnet.SetOldTransportDefaults(&http.Transport{
		TLSClientConfig: tlsConfig,
		DialContext:     (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
	})
	wrappers, err := transport.HTTPWrappersForConfig(cfg, proxy.MirrorRequest)
	if err != nil {
		return nil, err
	}
	return proxy.NewUpgradeRequestRoundTripper(rt, wrappers), nil
}

type responder struct{}

func (responder) Error(w http.ResponseWriter, _ *http.Request, err error) {
	klog.ErrorS(err, "proxying a request through the tunnel to the member's API server")
	http.Error(w, "member API server unreachable from the agent: "+err.Error(), http.StatusBadGateway)
}
