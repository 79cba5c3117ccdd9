package controlplane

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/authorization/union"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	aggregatorapiserver "k8s.io/kube-aggregator/pkg/apiserver"
	apiserverapp "k8s.io/kubernetes/cmd/kube-apiserver/app"
	apiserveroptions "k8s.io/kubernetes/cmd/kube-apiserver/app/options"
	"k8s.io/kubernetes/pkg/controlplane/reconcilers"
)

// serviceAccountIssuer is the issuer of the service-account tokens this control plane signs.
const serviceAccountIssuer = "https://kubernetes.default.svc.cluster.local"

// apiserverOptions configures kube-apiserver as a hub or member needs it: client-certificate and
// bootstrap-token authentication, RBAC, aggregation through the front-proxy CA, storage in etcd with Secrets
// encrypted, the admission plugins of c besides the default ones, no profiling endpoints unless c.Profiling
// asks for them.
func apiserverOptions(c *Config, pki PKI, etcdServers []string, etcdTLS *EtcdTLS) *apiserveroptions.ServerRunOptions {
	s := apiserveroptions.NewServerRunOptions()

	s.Etcd.StorageConfig.Transport.ServerList = etcdServers
	if etcdTLS != nil {
		s.Etcd.StorageConfig.Transport.TrustedCAFile = etcdTLS.CAFile
		s.Etcd.StorageConfig.Transport.CertFile = etcdTLS.CertFile
		s.Etcd.StorageConfig.Transport.KeyFile = etcdTLS.KeyFile
	}
	s.Etcd.StorageConfig.Prefix = c.EtcdPrefix
	s.Etcd.EncryptionProviderConfigFilepath = pki.EncryptionConfig()
	// Leases change most and are read least: every cluster's agent (every node's kubelet in a member)
	// renews one every 10 s, and one controller watches them. Their watch cache would hold every
	// renewal of the last minutes — 100 a second at 1,000 clusters — to serve that one watch, which etcd
	// serves as well.
	s.Etcd.WatchCacheSizes = []string{"leases.coordination.k8s.io#0"}
	for _, r := range c.UncachedResources {
		s.Etcd.WatchCacheSizes = append(s.Etcd.WatchCacheSizes, r+"#0")
	}
	// /debug/pprof would show any authenticated client with the right non-resource URL the process's goroutine
	// stacks and allocation sites: only a hub started to be measured serves it.
	s.Features.EnableProfiling = c.Profiling

	s.SecureServing.BindAddress = c.BindAddress
	s.SecureServing.BindPort = c.SecurePort
	s.SecureServing.ServerCert.CertDirectory = ""
	s.SecureServing.ServerCert.CertKey = genericoptions.CertKey{CertFile: pki.ServingCert(), KeyFile: pki.ServingKey()}
	s.GenericServerRunOptions.AdvertiseAddress = c.AdvertiseAddress

	s.Authentication.ClientCert.ClientCA = pki.CACert()
	if len(c.AnonymousPaths) > 0 {
		s.Authentication.AuthenticationConfigFile = authenticationConfig(c.DataDir)
	}
	s.Authentication.BootstrapToken.Enable = true
	s.Authentication.ServiceAccounts.KeyFiles = []string{pki.ServiceAccountPub()}
	s.Authentication.ServiceAccounts.Issuers = []string{serviceAccountIssuer}
	s.Authentication.APIAudiences = []string{serviceAccountIssuer}
	s.ServiceAccountSigningKeyFile = pki.ServiceAccountKey()
	s.Authentication.RequestHeader.ClientCAFile = pki.FrontProxyCACert()
	s.Authentication.RequestHeader.UsernameHeaders = []string{"X-Remote-User"}
	s.Authentication.RequestHeader.UIDHeaders = []string{"X-Remote-Uid"}
	s.Authentication.RequestHeader.GroupHeaders = []string{"X-Remote-Group"}
	s.Authentication.RequestHeader.ExtraHeaderPrefixes = []string{"X-Remote-Extra-"}
	s.Authentication.RequestHeader.AllowedNames = []string{frontProxyClientUser}
	s.ProxyClientCertFile = pki.FrontProxyClientCert()
	s.ProxyClientKeyFile = pki.FrontProxyClientKey()

	s.Authorization.Modes = []string{"Node", "RBAC"}
	for _, p := range c.AdmissionPlugins {
		if p.New != nil {
			s.Admission.GenericAdmission.Plugins.Register(p.Name, p.New)
			s.Admission.GenericAdmission.RecommendedPluginOrder = append(s.Admission.GenericAdmission.RecommendedPluginOrder, p.Name)
		}
		s.Admission.GenericAdmission.EnablePlugins = append(s.Admission.GenericAdmission.EnablePlugins, p.Name)
	}
	if configured(c.AdmissionPlugins) {
		s.Admission.GenericAdmission.ConfigFile = admissionConfig(c.DataDir)
	}

	// On shutdown, drain ordinary requests and give long-running ones (watches of agents in other processes)
	// two seconds instead of the request timeout of a minute.
	s.GenericServerRunOptions.ShutdownSendRetryAfter = true

	s.ServiceClusterIPRanges = "10.96.0.0/12"
	// Nothing runs pods against this API server's Service, and a loopback advertise address cannot be an
	// Endpoint, so the kubernetes Service keeps no endpoints.
	s.EndpointReconcilerType = string(reconcilers.NoneEndpointReconcilerType)
	return s
}

// runAPIServer completes and validates the options, then serves until ctx ends. It is kube-apiserver's own
// Run (options → Config → server chain) with c's additions: c.Authorizer goes first in the authorizer chain,
// and the aggregator resolves c.LocalServices itself.
func runAPIServer(ctx context.Context, s *apiserveroptions.ServerRunOptions, c *Config) error {
	localServices := c.LocalServices
	if err := s.GenericServerRunOptions.ComponentGlobalsRegistry.Set(); err != nil {
		return fmt.Errorf("kube-apiserver feature gates: %w", err)
	}
	rest.SetDefaultWarningHandler(rest.NoWarnings{})
	completed, err := s.Complete(ctx)
	if err != nil {
		return fmt.Errorf("kube-apiserver options: %w", err)
	}
	if errs := completed.Validate(); len(errs) != 0 {
		return fmt.Errorf("kube-apiserver options: %w", utilerrors.NewAggregate(errs))
	}
	if completed.InformerName == nil {
		if completed.InformerName, err = cache.NewInformerName("kube-apiserver"); err != nil {
			return err
		}
	}
	config, err := apiserverapp.NewConfig(completed)
	if err != nil {
		return err
	}
	if c.Authorizer != nil {
		// Each server of the chain keeps the authorizer it was configured with: the aggregator's filters
		// authorize requests, the kube-apiserver's answers SubjectAccessReviews.
		for _, g := range []*genericapiserver.Config{config.KubeAPIs.ControlPlane.Generic, &config.Aggregator.GenericConfig.Config, &config.ApiExtensions.GenericConfig.Config} {
			if g.Authorization.Authorizer, err = union.New(
				union.NamedAuthorizer{AuthorizerName: "flotilla", Authorizer: c.Authorizer},
				union.NamedAuthorizer{AuthorizerName: "kube-apiserver", Authorizer: g.Authorization.Authorizer},
			); err != nil {
				return err
			}
		}
	}
	if c.WrapHandler != nil {
		// The aggregator is the front of the server chain: its filters run once for every request, around
		// the handler given to BuildHandlerChainFunc.
		build := config.Aggregator.GenericConfig.BuildHandlerChainFunc
		config.Aggregator.GenericConfig.BuildHandlerChainFunc = func(h http.Handler, g *genericapiserver.Config) http.Handler {
			return build(c.WrapHandler(h), g)
		}
	}
	if len(localServices) != 0 {
		config.Aggregator.ExtraConfig.ServiceResolver = &localResolver{local: localServices, delegate: config.Aggregator.ExtraConfig.ServiceResolver}
	}
	cc, err := config.Complete()
	if err != nil {
		return err
	}
	server, err := apiserverapp.CreateServerChain(cc)
	if err != nil {
		return err
	}
	prepared, err := server.PrepareRun()
	if err != nil {
		return err
	}
	return prepared.Run(ctx)
}

// localResolver sends the aggregator to an address in this process for the Services it knows, and asks the
// usual resolver for the others. The hub has no nodes and no kube-proxy: a Service of an APIService the hub
// process serves itself has no ClusterIP route and no endpoints, so the aggregator could not reach it. The
// Service still exists (of type ExternalName, which the aggregator's availability check does not require
// endpoints for) so that the APIService is valid wherever it is read.
type localResolver struct {
	local    map[string]*url.URL
	delegate aggregatorapiserver.ServiceResolver
}

func (r *localResolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	if u, ok := r.local[namespace+"/"+name]; ok {
		return u, nil
	}
	return r.delegate.ResolveEndpoint(namespace, name, port)
}

// hostsFor lists the names the serving certificate must cover.
func hostsFor(c *Config) []string {
	hosts := []string{"localhost", "127.0.0.1", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "10.96.0.1"}
	if c.AdvertiseAddress != nil && !c.AdvertiseAddress.Equal(net.IPv4(127, 0, 0, 1)) {
		hosts = append(hosts, c.AdvertiseAddress.String())
	}
	if c.BindAddress != nil && !c.BindAddress.IsUnspecified() && !c.BindAddress.IsLoopback() {
		hosts = append(hosts, c.BindAddress.String())
	}
	return append(hosts, c.TLSSANs...)
}
