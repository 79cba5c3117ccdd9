package proxy

import (
	"context"
	"fmt"
	"net"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericfilters "k8s.io/apiserver/pkg/server/filters"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	openapicommon "k8s.io/kube-openapi/pkg/common"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	proxyv1alpha1 "github.com/flotilla-io/flotilla/api/proxy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/controlplane"
	"github.com/flotilla-io/flotilla/internal/tunnel"
)

// ServiceName is the Service, in flotilla-system, that the proxy's APIService points at. It is of type
// ExternalName and never resolved: the hub's aggregator is told where the proxy listens in the hub process.
const ServiceName = "flotilla-proxy"

// ServiceHost is the name the proxy's serving certificate covers: the one the aggregator verifies.
const ServiceHost = ServiceName + "." + clusterv1alpha1.SystemNamespace + ".svc"

// Config is what the proxy server needs.
type Config struct {
	// Listener is where it serves; the hub's aggregator is sent there.
	Listener net.Listener
	// CertFile and KeyFile are its serving certificate, for ServiceHost; CABundle verifies it (the
	// APIService carries it to the aggregator).
	CertFile, KeyFile string
	CABundle          []byte
	// AuthKubeconfig reaches the hub that authentication and authorization are delegated to
	// (controlplane.DelegatedServing).
	AuthKubeconfig string
	// Hub reads Clusters and the Secrets of push members.
	Hub client.Reader
	// Backends reach the members.
	Backends Backends
	// Tunnels, when set, serve clusters/NAME/attach: Pull clusters' agents open their tunnels there.
	Tunnels *tunnel.Registry
	// UserGroups may ask for fleet lists (FleetListRole).
	UserGroups []string
	// SystemGroups are the system:* groups of a hub user that members see too (impersonation).
	SystemGroups []string
}

// longRunning says which requests the request timeout and the in-flight limits leave alone. Every request to
// clusters/NAME/proxy may be a watch, a log stream or an exec session (their verb here is "get" or
// "create"): like pods/proxy in kube-apiserver they are long-running; the member applies its own limits. An
// agent's tunnel (clusters/NAME/attach) lasts as long as the agent runs.
var longRunning = genericfilters.BasicLongRunningRequestCheck(sets.NewString("watch"), sets.NewString(proxyv1alpha1.SubresourceProxy, proxyv1alpha1.SubresourceAttach))

// Server is the proxy's API server, ready to run.
type Server struct {
	server     *genericapiserver.GenericAPIServer
	caBundle   []byte
	userGroups []string
}

// New builds the proxy's API server with a serving certificate of its own.
func New(c Config) (*Server, error) {
	scheme, codecs, err := newScheme()
	if err != nil {
		return nil, err
	}
	config, err := controlplane.DelegatedServing{Listener: c.Listener, CertFile: c.CertFile, KeyFile: c.KeyFile, AuthKubeconfig: c.AuthKubeconfig}.Config(&codecs)
	if err != nil {
		return nil, err
	}
	// Installing the group builds the type converters of its kinds from this OpenAPI (not served).
	config.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(func(openapicommon.ReferenceCallback) map[string]openapicommon.OpenAPIDefinition { return nil }, openapinamer.NewDefinitionNamer(scheme))
	config.OpenAPIV3Config.IgnorePrefixes = []string{"/apis/" + proxyv1alpha1.GroupName}
	config.LongRunningFunc = longRunning

	server, err := config.Complete(nil).New("flotilla-proxy", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, err
	}
	clusters := newClusterREST(c.Hub)
	group := genericapiserver.NewDefaultAPIGroupInfo(proxyv1alpha1.GroupName, scheme, runtime.NewParameterCodec(scheme), codecs)
	storage := map[string]rest.Storage{}
	storage[clustersResource.Resource] = clusters
	storage[clustersResource.Resource+"/"+proxyv1alpha1.SubresourceProxy] = &proxyREST{clusters: clusters, backends: c.Backends, systemGroups: c.SystemGroups}
	storage[fleetResource.Resource] = &fleetREST{clusters: clusters, backends: c.Backends, authorizer: config.Authorization.Authorizer, systemGroups: c.SystemGroups}
	if c.Tunnels != nil {
		storage[clustersResource.Resource+"/"+proxyv1alpha1.SubresourceAttach] = &attachREST{hub: c.Hub, tunnels: c.Tunnels}
	}
	group.VersionedResourcesStorageMap[proxyv1alpha1.GroupVersion.Version] = storage
	if err := server.InstallAPIGroup(&group); err != nil {
		return nil, err
	}
	return &Server{server: server, caBundle: c.CABundle, userGroups: c.UserGroups}, nil
}

// Run serves until ctx ends.
func (s *Server) Run(ctx context.Context) error {
	return s.server.PrepareRun().RunWithContext(ctx)
}

// Register creates or updates the Service and APIService that send the hub's aggregator to this server, and
// the RBAC that lets the fleet's users ask for a fleet list (fleetListRBAC).
func (s *Server) Register(ctx context.Context, cfg *restclient.Config) error {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return err
	}
	if err := rbacv1.AddToScheme(scheme); err != nil {
		return err
	}
	if err := apiregistrationv1.AddToScheme(scheme); err != nil {
		return err
	}
	hub, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: ServiceName, Namespace: clusterv1alpha1.SystemNamespace},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: ServiceHost, Ports: []corev1.ServicePort{{Name: "https", Port: 443}}},
	}
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error { return apply(ctx, hub, svc.DeepCopy()) }); err != nil {
		return fmt.Errorf("proxy Service: %w", err)
	}
	port := int32(443)
	apiService := &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: proxyv1alpha1.GroupVersion.Version + "." + proxyv1alpha1.GroupName},
		Spec: apiregistrationv1.APIServiceSpec{
			Group: proxyv1alpha1.GroupName, Version: proxyv1alpha1.GroupVersion.Version,
			Service:              &apiregistrationv1.ServiceReference{Namespace: clusterv1alpha1.SystemNamespace, Name: ServiceName, Port: &port},
			CABundle:             s.caBundle,
			GroupPriorityMinimum: 1000,
			VersionPriority:      15,
		},
	}
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error { return apply(ctx, hub, apiService.DeepCopy()) }); err != nil {
		return fmt.Errorf("proxy APIService: %w", err)
	}
	role, binding := fleetListRBAC(s.userGroups)
	for _, obj := range []client.Object{role, binding} {
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error { return apply(ctx, hub, obj.DeepCopyObject().(client.Object)) }); err != nil {
			return fmt.Errorf("fleet list RBAC: %w", err)
		}
	}
	return nil
}

// apply creates obj, or overwrites the one there. Hubs that share one API register the same objects: each
// start may rewrite them, and a conflict is retried.
func apply(ctx context.Context, hub client.Client, obj client.Object) error {
	err := hub.Create(ctx, obj)
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	current := obj.DeepCopyObject().(client.Object)
	if err := hub.Get(ctx, client.ObjectKeyFromObject(obj), current); err != nil {
		return err
	}
	obj.SetResourceVersion(current.GetResourceVersion())
	return hub.Update(ctx, obj)
}
