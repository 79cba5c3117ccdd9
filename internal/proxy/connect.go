package proxy

import (
	"context"
	"fmt"
	"net/http"
	"net/textproto"
	"net/url"
	"path"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/transport"

	proxyv1alpha1 "github.com/flotilla-io/flotilla/api/proxy/v1alpha1"
)

// proxyREST serves clusters/NAME/proxy/PATH: the request goes to PATH on the member's API server, as the hub
// with the caller's identity impersonated. The hub's RBAC on clusters/proxy (resourceNames: the cluster)
// has decided by now that the caller may reach this cluster; the member's RBAC decides what it may do there.
type proxyREST struct {
	clusters *clusterREST
	backends Backend
	// systemGroups are the hub's system:* groups passed on to members (impersonation).
	systemGroups []string
}

var _ rest.Connecter = &proxyREST{}

func (r *proxyREST) New() runtime.Object { return &proxyv1alpha1.ClusterProxyOptions{} }
func (r *proxyREST) Destroy()            {}

// NewConnectOptions asks the installer for the path below .../proxy in proxyv1alpha1.ClusterProxyOptions.Path.
func (r *proxyREST) NewConnectOptions() (runtime.Object, bool, string) {
	return &proxyv1alpha1.ClusterProxyOptions{}, true, "path"
}

// ConnectMethods are every method a Kubernetes API client uses.
func (r *proxyREST) ConnectMethods() []string {
	return []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}
}

// Connect finds the cluster and how to reach it, and returns the handler that forwards the request.
func (r *proxyREST) Connect(ctx context.Context, name string, opts runtime.Object, responder rest.Responder) (http.Handler, error) {
	caller, ok := request.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewUnauthorized("no authenticated user")
	}
	cluster, err := r.clusters.cluster(ctx, name)
	if err != nil {
		return nil, err
	}
	target, err := r.backends.For(ctx, cluster)
	if err != nil {
		return nil, err
	}
	location := *target.URL
	location.Path = path.Join("/", location.Path, opts.(*proxyv1alpha1.ClusterProxyOptions).Path)
	if strings.HasSuffix(opts.(*proxyv1alpha1.ClusterProxyOptions).Path, "/") && !strings.HasSuffix(location.Path, "/") {
		location.Path += "/"
	}
	return &forwarder{caller: impersonation(caller, r.systemGroups), target: target, location: &location, responder: responder}, nil
}

// forwarder sends one request to a member.
type forwarder struct {
	caller    transport.ImpersonationConfig
	target    *Target
	location  *url.URL
	responder rest.Responder
}

func (f *forwarder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	out, err := impersonating(req, f.caller)
	if err != nil {
		f.responder.Error(err)
		return
	}
	upgrade := httpstream.IsUpgradeRequest(req)
	if upgrade && crossSite(req) {
		f.responder.Error(apierrors.NewForbidden(clustersResource, "", fmt.Errorf("an upgrade request from origin %q, another site than %s: a web page may not open exec, attach or port-forward sessions through the hub", req.Header.Get("Origin"), req.Host)))
		return
	}
	// What a member answers is the member's content, served on the hub's origin: a browser must run none of
	// it as the hub's (sandbox makes a page's origin unique, so its script reads nothing of the hub with the
	// person's credentials), nor guess a type the member did not state. The member's own headers are added
	// to these, never replace them.
	w.Header().Set("Content-Security-Policy", "sandbox")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	// UpgradeAwareHandler is how kube-apiserver proxies to pods and nodes: it streams watches and logs, and
	// joins the two connections of exec, attach and port-forward after the protocol switch.
	h := proxy.NewUpgradeAwareHandler(f.location, f.target.Transport, false, upgrade, proxy.NewErrorResponder(f.responder))
	h.UpgradeTransport = f.target.UpgradeTransport
	h.UseLocationHost = true
	h.ServeHTTP(w, out)
}

// crossSite says whether a browser sent req from a page of another origin than the one it is addressed to.
// Clients other than browsers send no Origin.
func crossSite(req *http.Request) bool {
	origin := req.Header.Get("Origin")
	if origin == "" {
		return false
	}
	u, err := url.Parse(origin)
	return err != nil || u.Scheme != "https" || !strings.EqualFold(u.Host, req.Host)
}

// impersonating returns a copy of req that carries the caller's identity as impersonation headers and none
// of the caller's credentials or identity headers. A request that names an identity to impersonate is
// refused: only the hub chooses who the member sees.
func impersonating(req *http.Request, caller transport.ImpersonationConfig) (*http.Request, error) {
	if err := refuseChosenIdentity(req); err != nil {
		return nil, err
	}
	out := req.Clone(req.Context())
	out.Header.Del("Authorization")
	for key := range out.Header {
		// The front proxy's identity headers are for this server, not for the member.
		if strings.HasPrefix(textproto.CanonicalMIMEHeaderKey(key), "X-Remote-") {
			out.Header.Del(key)
		}
	}
	// client-go's impersonating round tripper sets the headers as every Kubernetes client does (extra keys
	// escaped); MirrorRequest hands back the request it would have sent.
	resp, err := transport.NewImpersonatingRoundTripper(caller, proxy.MirrorRequest).RoundTrip(out)
	if err != nil {
		return nil, err
	}
	return resp.Request, nil
}

// refuseChosenIdentity refuses a request that names an identity to impersonate.
func refuseChosenIdentity(req *http.Request) error {
	for key := range req.Header {
		if strings.HasPrefix(textproto.CanonicalMIMEHeaderKey(key), "Impersonate-") {
			return apierrors.NewForbidden(clustersResource, "", fmt.Errorf("header %s: the proxy impersonates the authenticated caller; it takes no identity from the request", key))
		}
	}
	return nil
}
