package controlplane

import (
	"net"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/util/compatibility"
	restclient "k8s.io/client-go/rest"
)

// DelegatedServing is where an API server of the hub process's own (the proxy behind the aggregator, the
// dashboard on its own port) serves, and who decides who its callers are and what they may do.
type DelegatedServing struct {
	// Listener is where it serves TLS with CertFile and KeyFile.
	Listener          net.Listener
	CertFile, KeyFile string
	// AuthKubeconfig reaches the hub that authentication (client certificates of the hub's client CA, bearer
	// tokens through TokenReviews, the front proxy's headers, all read from
	// kube-system/extension-apiserver-authentication) and authorization (SubjectAccessReviews) are delegated to.
	AuthKubeconfig string
}

// Config is a generic API server configuration that serves as s says, encoding its answers with codecs (nil:
// only the meta/v1 kinds every API server answers with). The caller adds what it serves.
func (s DelegatedServing) Config(codecs *serializer.CodecFactory) (*genericapiserver.Config, error) {
	if codecs == nil {
		scheme := runtime.NewScheme()
		metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
		c := serializer.NewCodecFactory(scheme)
		codecs = &c
	}
	serving := genericoptions.NewSecureServingOptions()
	serving.Listener = s.Listener
	serving.BindPort = s.Listener.Addr().(*net.TCPAddr).Port
	serving.ServerCert.CertDirectory = ""
	serving.ServerCert.CertKey = genericoptions.CertKey{CertFile: s.CertFile, KeyFile: s.KeyFile}

	config := genericapiserver.NewConfig(*codecs)
	config.EffectiveVersion = compatibility.DefaultBuildEffectiveVersion()
	config.ExternalAddress = s.Listener.Addr().String()
	config.LoopbackClientConfig = &restclient.Config{Host: "https://" + s.Listener.Addr().String()}
	// Neither server describes kinds of its own: they serve no OpenAPI.
	config.SkipOpenAPIInstallation = true
	if err := serving.ApplyTo(&config.SecureServing); err != nil {
		return nil, err
	}
	authn := genericoptions.NewDelegatingAuthenticationOptions()
	authn.RemoteKubeConfigFile = s.AuthKubeconfig
	if err := authn.ApplyTo(&config.Authentication, config.SecureServing, nil); err != nil {
		return nil, err
	}
	authz := genericoptions.NewDelegatingAuthorizationOptions()
	authz.RemoteKubeConfigFile = s.AuthKubeconfig
	if err := authz.ApplyTo(&config.Authorization); err != nil {
		return nil, err
	}
	return config, nil
}
