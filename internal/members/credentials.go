package members

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// Keys of a Push cluster's Secret: either a kubeconfig, or a bearer token with the CA bundle that verifies
// the member's serving certificate (optional: without it the system's roots do).
const (
	SecretKeyKubeconfig = "kubeconfig"
	SecretKeyToken      = "token"
	SecretKeyCABundle   = "caBundle"
)

// ValidateKubeconfig refuses a kubeconfig the hub could use only by running a command or reading a file:
// exec and auth-provider plugins, and every file reference. What the hub stores for a Push cluster is data.
func ValidateKubeconfig(cfg *clientcmdapi.Config) error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(cfg.AuthInfos)) {
		u := cfg.AuthInfos[name]
		if u.Exec != nil {
			errs = append(errs, fmt.Errorf("user %q runs the command %q (exec)", name, u.Exec.Command))
		}
		if u.AuthProvider != nil {
			errs = append(errs, fmt.Errorf("user %q uses the auth-provider %q", name, u.AuthProvider.Name))
		}
		for _, f := range []struct{ field, file string }{{"client-certificate", u.ClientCertificate}, {"client-key", u.ClientKey}, {"tokenFile", u.TokenFile}} {
			if f.file != "" {
				errs = append(errs, fmt.Errorf("user %q names the file %s %q", name, f.field, f.file))
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Clusters)) {
		if file := cfg.Clusters[name].CertificateAuthority; file != "" {
			errs = append(errs, fmt.Errorf("cluster %q names the file certificate-authority %q", name, file))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("the hub never runs commands or reads files for a push cluster; use a kubeconfig with embedded data "+
		"(a token, or client-certificate-data and client-key-data): %w", errors.Join(errs...))
}

// RESTConfig builds the client configuration the hub reaches a Push cluster with: the address, proxy and
// TLS verification of the Cluster, the identity (and CA) of its Secret. It never reads a file or runs a
// command: a kubeconfig that would need one is refused, as is a Secret with both forms of credentials.
func RESTConfig(cluster *clusterv1alpha1.Cluster, secret *corev1.Secret) (*rest.Config, error) {
	kubeconfig, hasKubeconfig := secret.Data[SecretKeyKubeconfig]
	token, hasToken := secret.Data[SecretKeyToken]
	var cfg *rest.Config
	switch {
	case hasKubeconfig && hasToken:
		return nil, fmt.Errorf("keys %s and %s: keep one", SecretKeyKubeconfig, SecretKeyToken)
	case hasKubeconfig:
		if _, ok := secret.Data[SecretKeyCABundle]; ok {
			return nil, fmt.Errorf("key %s goes with %s; a kubeconfig carries certificate-authority-data", SecretKeyCABundle, SecretKeyToken)
		}
		var err error
		if cfg, err = kubeconfigRESTConfig(kubeconfig); err != nil {
			return nil, fmt.Errorf("key %s: %w", SecretKeyKubeconfig, err)
		}
	case hasToken:
		cfg = &rest.Config{BearerToken: strings.TrimSpace(string(token))}
		cfg.CAData = secret.Data[SecretKeyCABundle]
	default:
		return nil, fmt.Errorf("neither key %s nor key %s", SecretKeyKubeconfig, SecretKeyToken)
	}
	cfg.Host = cluster.Spec.APIEndpoint
	if u, err := url.Parse(cfg.Host); err == nil && u.Scheme == "http" && (cfg.BearerToken != "" || cfg.Username != "") {
		return nil, fmt.Errorf("spec.apiEndpoint %s is plain http: the hub never sends a token or password unencrypted; use https", cfg.Host)
	}
	if cluster.Spec.InsecureSkipTLSVerification {
		cfg.Insecure, cfg.CAData = true, nil
	}
	if cluster.Spec.ProxyURL != "" {
		proxy, err := url.Parse(cluster.Spec.ProxyURL)
		if err != nil {
			return nil, fmt.Errorf("spec.proxyURL: %w", err)
		}
		cfg.Proxy = http.ProxyURL(proxy)
	}
	return cfg, nil
}

// kubeconfigRESTConfig reads a stored kubeconfig after checking it names no file and runs nothing.
func kubeconfigRESTConfig(data []byte) (*rest.Config, error) {
	kubeconfig, err := clientcmd.Load(data)
	if err != nil {
		return nil, err
	}
	if err := ValidateKubeconfig(kubeconfig); err != nil {
		return nil, err
	}
	for _, name := range slices.Sorted(maps.Keys(kubeconfig.Clusters)) {
		c := kubeconfig.Clusters[name]
		if c.InsecureSkipTLSVerify {
			return nil, fmt.Errorf("cluster %q skips TLS verification: say so in the Cluster's spec.insecureSkipTLSVerification", name)
		}
		if c.ProxyURL != "" {
			return nil, fmt.Errorf("cluster %q has a proxy-url: set the Cluster's spec.proxyURL instead", name)
		}
	}
	return clientcmd.NewDefaultClientConfig(*kubeconfig, &clientcmd.ConfigOverrides{}).ClientConfig()
}
