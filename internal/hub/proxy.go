package hub

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/proxy"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

// proxyListener opens the loopback port the proxy serves on, before kube-apiserver starts, and returns the
// LocalServices entry that sends the aggregator there.
func (h *Hub) proxyListener() (map[string]*url.URL, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy listener: %w", err)
	}
	h.proxyLn = ln
	return map[string]*url.URL{
		clusterv1alpha1.SystemNamespace + "/" + proxy.ServiceName: {Scheme: "https", Host: ln.Addr().String()},
	}, nil
}

// startProxy builds the proxy's API server, which delegates to the hub as the front identity, and registers
// it with the hub's aggregator. It reads Clusters
// from a cache of its own (every proxied request looks its cluster up) and push credentials directly.
func (h *Hub) startProxy(ctx context.Context, o *Options, frontKubeconfig string) error {
	clusters, err := cache.New(h.Config, cache.Options{
		Scheme:           scheme.New(),
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject:         map[client.Object]cache.ByObject{&clusterv1alpha1.Cluster{}: {}},
	})
	if err != nil {
		return err
	}
	reader, err := client.New(h.Config, client.Options{Scheme: scheme.New(), Cache: &client.CacheOptions{Reader: clusters, DisableFor: []client.Object{&corev1.Secret{}}}})
	if err != nil {
		return err
	}
	pki := h.controlPlane.PKI()
	certFile, keyFile := filepath.Join(pki.Dir, "proxy-serving.crt"), filepath.Join(pki.Dir, "proxy-serving.key")
	if err := pki.EnsureServingCert(certFile, keyFile, proxy.ServiceName, []string{proxy.ServiceHost, "127.0.0.1"}); err != nil {
		return fmt.Errorf("proxy serving certificate: %w", err)
	}
	caBundle, err := os.ReadFile(pki.CACert())
	if err != nil {
		return err
	}
	server, err := proxy.New(proxy.Config{
		Listener:       h.proxyLn,
		CertFile:       certFile,
		KeyFile:        keyFile,
		CABundle:       caBundle,
		AuthKubeconfig: frontKubeconfig,
		UserGroups:     o.FleetUserGroups,
		SystemGroups:   o.ProxySystemGroups,
		Hub:            reader,
		Backends:       proxy.Backends{Push: proxy.NewPushBackend(reader), Pull: h.pullBackend},
		Tunnels:        h.Tunnels,
	})
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	if err := server.Register(ctx, h.Config); err != nil {
		return err
	}
	h.proxyCache, h.proxyServer = clusters, server
	return nil
}

// runProxy serves the proxy until ctx ends; it returns early only when the server or its cache fails.
func (h *Hub) runProxy(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return h.proxyCache.Start(gctx) })
	g.Go(func() error { return h.proxyServer.Run(gctx) })
	if err := g.Wait(); err != nil && ctx.Err() == nil {
		return fmt.Errorf("proxy: %w", err)
	}
	return nil
}
