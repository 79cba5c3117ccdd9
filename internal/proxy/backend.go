package proxy

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// Backend reaches the kube-apiservers of one kind of member: push members directly with their stored
// credentials (PushBackend), pull members through the tunnel their agent opens.
type Backend interface {
	// For returns how to reach cluster's kube-apiserver as the hub. An error that is an API status (such
	// as apierrors.NewServiceUnavailable) is what the caller sees.
	For(ctx context.Context, cluster *clusterv1alpha1.Cluster) (*Target, error)
}

// Target is a member kube-apiserver as the hub reaches it. Both transports authenticate as the hub; the
// proxy adds the caller's identity as impersonation headers on each request.
type Target struct {
	// URL is the member API server's base address.
	URL *url.URL
	// Transport carries ordinary requests, watches included.
	Transport http.RoundTripper
	// UpgradeTransport carries the requests that switch protocols (exec, attach, port-forward).
	UpgradeTransport proxy.UpgradeRequestRoundTripper
}

// TargetFor builds the Target of a member from a client configuration: its host, TLS settings, credentials,
// proxy and dialer. A tunnel gives cfg a Dial that opens connections through the tunnel.
func TargetFor(cfg *rest.Config) (*Target, error) {
	u, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return nil, err
	}
	tc, err := cfg.TransportConfig()
	if err != nil {
		return nil, err
	}
	// Two base transports from two TLS configurations: the ordinary one may speak HTTP/2, which configures
	// its TLS config for h2; a protocol upgrade needs HTTP/1.1.
	base, err := baseTransport(cfg, tc, utilnet.SetTransportDefaults)
	if err != nil {
		return nil, err
	}
	upgradeBase, err := baseTransport(cfg, tc, utilnet.SetOldTransportDefaults)
	if err != nil {
		return nil, err
	}
	rt, err := transport.HTTPWrappersForConfig(tc, base)
	if err != nil {
		return nil, err
	}
	upgradeWrappers, err := transport.HTTPWrappersForConfig(tc, proxy.MirrorRequest)
	if err != nil {
		return nil, err
	}
	return &Target{URL: u, Transport: rt, UpgradeTransport: proxy.NewUpgradeRequestRoundTripper(upgradeBase, upgradeWrappers)}, nil
}

func baseTransport(cfg *rest.Config, tc *transport.Config, defaults func(*http.Transport) *http.Transport) (*http.Transport, error) {
	tlsConfig, err := transport.TLSConfigFor(tc)
	if err != nil {
		return nil, err
	}
	return defaults(&http.Transport{TLSClientConfig: tlsConfig, Proxy: cfg.Proxy, DialContext: cfg.Dial}), nil
}

// Backends picks a cluster's Backend by its sync mode.
type Backends struct {
	// Push reaches push members.
	Push Backend
	// Pull reaches pull members; nil until a tunnel serves them.
	Pull Backend
}

// For returns the Target of cluster from the Backend of its mode.
func (b Backends) For(ctx context.Context, cluster *clusterv1alpha1.Cluster) (*Target, error) {
	backend := b.Push
	if cluster.Spec.SyncMode != clusterv1alpha1.Push {
		backend = b.Pull
	}
	if backend == nil {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("no tunnel for cluster %s: the hub reaches %s members only through the tunnel their agent opens", cluster.Name, cluster.Spec.SyncMode))
	}
	return backend.For(ctx, cluster)
}
