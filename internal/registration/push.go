package registration

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// PushRequest registers a cluster the hub reaches itself.
type PushRequest struct {
	ClusterName string
	// ClusterID identifies the member (its kube-system namespace UID).
	ClusterID string
	// Kubeconfig reaches the member; it is stored, flattened to one context, in a Secret on the hub.
	Kubeconfig *clientcmdapi.Config
	Labels     map[string]string
	Provider   string
	Region     string
	Zones      []string
}

// Keys of a Push cluster's Secret: either a kubeconfig, or a bearer token with the CA bundle that verifies
// the member's serving certificate (optional: without it the system's roots do).
const (
	SecretKeyKubeconfig = "kubeconfig"
	SecretKeyToken      = "token"
	SecretKeyCABundle   = "caBundle"
)

// JoinPush stores the member's credentials in a Secret and creates the Cluster (syncMode Push), its
// namespace and Lease. Joining the same member again updates the credentials. It runs where the kubeconfig
// was loaded: files it names are read here and embedded, so what the hub stores is self-contained; a
// kubeconfig that runs a command for its credentials is refused.
func JoinPush(ctx context.Context, c client.Client, r PushRequest) (*clusterv1alpha1.Cluster, error) {
	if msgs := validation.IsDNS1123Label(r.ClusterName); len(msgs) > 0 {
		return nil, fmt.Errorf("--cluster-name %q: %v", r.ClusterName, msgs)
	}
	if reason, taken, err := NameTaken(ctx, c, r.ClusterName, r.ClusterID, clusterv1alpha1.Push); err != nil {
		return nil, err
	} else if taken {
		return nil, fmt.Errorf("%s", reason)
	}
	cfg, err := selfContained(r.Kubeconfig)
	if err != nil {
		return nil, err
	}
	// The Cluster says how the member is reached; the stored kubeconfig keeps only who the hub is to it.
	member := cfg.Clusters[cfg.Contexts[cfg.CurrentContext].Cluster]
	server, insecure, proxyURL := member.Server, member.InsecureSkipTLSVerify, member.ProxyURL
	member.InsecureSkipTLSVerify, member.ProxyURL = false, ""
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, err
	}
	secret := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-" + r.ClusterName, Namespace: clusterv1alpha1.SystemNamespace, Labels: map[string]string{LabelClusterName: r.ClusterName}},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{SecretKeyKubeconfig: data},
	}
	if err := apply(ctx, c, secret); err != nil {
		return nil, err
	}
	return EnsureClusterObjects(ctx, c, &clusterv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: r.ClusterName, Labels: r.Labels},
		Spec: clusterv1alpha1.ClusterSpec{
			SyncMode: clusterv1alpha1.Push, ID: r.ClusterID, APIEndpoint: server,
			InsecureSkipTLSVerification: insecure, ProxyURL: proxyURL,
			SecretRef: &clusterv1alpha1.LocalSecretReference{Namespace: clusterv1alpha1.SystemNamespace, Name: secret.Name},
			Provider:  r.Provider, Region: r.Region, Zones: r.Zones,
		},
	})
}

// selfContained returns the current context of kubeconfig alone, with the files it names (certificates,
// keys, token file) read and embedded, and refuses one that needs a command or plugin for its credentials.
func selfContained(kubeconfig *clientcmdapi.Config) (*clientcmdapi.Config, error) {
	cfg := kubeconfig.DeepCopy()
	if err := clientcmdapi.MinifyConfig(cfg); err != nil {
		return nil, err
	}
	if err := clientcmdapi.FlattenConfig(cfg); err != nil {
		return nil, err
	}
	for _, user := range cfg.AuthInfos {
		if user.TokenFile != "" {
			token, err := os.ReadFile(user.TokenFile)
			if err != nil {
				return nil, fmt.Errorf("member kubeconfig: %w", err)
			}
			user.Token, user.TokenFile = strings.TrimSpace(string(token)), ""
		}
	}
	if err := ValidatePushKubeconfig(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// ValidatePushKubeconfig refuses a kubeconfig the hub could use only by running a command or reading a file:
// exec and auth-provider plugins, and every file reference. What the hub stores for a Push cluster is data.
func ValidatePushKubeconfig(cfg *clientcmdapi.Config) error {
	var errs []error
	for _, name := range sortedKeys(cfg.AuthInfos) {
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
	for _, name := range sortedKeys(cfg.Clusters) {
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

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// PushRESTConfig builds the client configuration the hub reaches a Push cluster with: the address, proxy and
// TLS verification of the Cluster, the identity (and CA) of its Secret. It never reads a file or runs a
// command: a kubeconfig that would need one is refused, as is a Secret with both forms of credentials.
func PushRESTConfig(cluster *clusterv1alpha1.Cluster, secret *corev1.Secret) (*rest.Config, error) {
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
	if err := ValidatePushKubeconfig(kubeconfig); err != nil {
		return nil, err
	}
	for _, name := range sortedKeys(kubeconfig.Clusters) {
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
