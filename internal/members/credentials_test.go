package members

import (
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

func kubeconfigBytes(t *testing.T, user *clientcmdapi.AuthInfo, cluster *clientcmdapi.Cluster) []byte {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	if cluster.Server == "" {
		cluster.Server = "https://kubeconfig-server:6443"
	}
	cfg.Clusters["m"], cfg.AuthInfos["m"] = cluster, user
	cfg.Contexts["m"] = &clientcmdapi.Context{Cluster: "m", AuthInfo: "m"}
	cfg.CurrentContext = "m"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestRESTConfig: the hub's client for a Push cluster takes the address, proxy and TLS verification from
// the Cluster and the identity from the Secret, and is refused whatever would run a command or read a file.
func TestRESTConfig(t *testing.T) {
	ca := []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
	cluster := func(change func(*clusterv1alpha1.ClusterSpec)) *clusterv1alpha1.Cluster {
		c := &clusterv1alpha1.Cluster{Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push, APIEndpoint: "https://member:6443"}}
		if change != nil {
			change(&c.Spec)
		}
		return c
	}
	data := map[string][]byte{"token": []byte("tok\n"), "caBundle": ca}
	tests := []struct {
		name    string
		cluster *clusterv1alpha1.Cluster
		data    map[string][]byte
		wantErr string
		check   func(t *testing.T, host, token string, insecure bool, caData []byte, proxy string)
	}{
		{name: "token and caBundle", cluster: cluster(nil), data: data,
			check: func(t *testing.T, host, token string, insecure bool, caData []byte, proxy string) {
				if host != "https://member:6443" || token != "tok" || insecure || string(caData) != string(ca) || proxy != "" {
					t.Fatalf("host %s token %q insecure %v ca %q proxy %q", host, token, insecure, caData, proxy)
				}
			}},
		{name: "insecure drops the CA", cluster: cluster(func(s *clusterv1alpha1.ClusterSpec) { s.InsecureSkipTLSVerification = true }), data: data,
			check: func(t *testing.T, _, _ string, insecure bool, caData []byte, _ string) {
				if !insecure || caData != nil {
					t.Fatalf("insecure %v ca %q", insecure, caData)
				}
			}},
		{name: "proxy", cluster: cluster(func(s *clusterv1alpha1.ClusterSpec) { s.ProxyURL = "socks5://proxy:1080" }), data: data,
			check: func(t *testing.T, _, _ string, _ bool, _ []byte, proxy string) {
				if proxy != "socks5://proxy:1080" {
					t.Fatalf("proxy %q", proxy)
				}
			}},
		{name: "kubeconfig: the Cluster's address wins", cluster: cluster(nil),
			data: map[string][]byte{"kubeconfig": kubeconfigBytes(t, &clientcmdapi.AuthInfo{Token: "kt"}, &clientcmdapi.Cluster{CertificateAuthorityData: ca})},
			check: func(t *testing.T, host, token string, _ bool, caData []byte, _ string) {
				if host != "https://member:6443" || token != "kt" || string(caData) != string(ca) {
					t.Fatalf("host %s token %q ca %q", host, token, caData)
				}
			}},
		{name: "a token over plain http", cluster: cluster(func(s *clusterv1alpha1.ClusterSpec) { s.APIEndpoint = "http://member:8080" }), data: data,
			wantErr: "never sends a token or password unencrypted"},
		{name: "both forms", cluster: cluster(nil), data: map[string][]byte{"token": []byte("t"), "kubeconfig": []byte("x")}, wantErr: "keys kubeconfig and token: keep one"},
		{name: "caBundle with a kubeconfig", cluster: cluster(nil), data: map[string][]byte{"caBundle": ca, "kubeconfig": []byte("x")}, wantErr: "key caBundle goes with token"},
		{name: "neither", cluster: cluster(nil), data: map[string][]byte{"caBundle": ca}, wantErr: "neither key kubeconfig nor key token"},
		{name: "exec", cluster: cluster(nil),
			data:    map[string][]byte{"kubeconfig": kubeconfigBytes(t, &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{Command: "aws"}}, &clientcmdapi.Cluster{})},
			wantErr: `user "m" runs the command "aws" (exec)`},
		{name: "client certificate file", cluster: cluster(nil),
			data:    map[string][]byte{"kubeconfig": kubeconfigBytes(t, &clientcmdapi.AuthInfo{ClientCertificate: "/etc/c.crt", ClientKey: "/etc/c.key"}, &clientcmdapi.Cluster{})},
			wantErr: `user "m" names the file client-certificate "/etc/c.crt"`},
		{name: "insecure in the kubeconfig", cluster: cluster(nil),
			data:    map[string][]byte{"kubeconfig": kubeconfigBytes(t, &clientcmdapi.AuthInfo{Token: "t"}, &clientcmdapi.Cluster{InsecureSkipTLSVerify: true})},
			wantErr: "spec.insecureSkipTLSVerification"},
		{name: "proxy in the kubeconfig", cluster: cluster(nil),
			data:    map[string][]byte{"kubeconfig": kubeconfigBytes(t, &clientcmdapi.AuthInfo{Token: "t"}, &clientcmdapi.Cluster{ProxyURL: "http://p:3128"})},
			wantErr: "spec.proxyURL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := RESTConfig(tt.cluster, &corev1.Secret{Data: tt.data})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			proxy := ""
			if cfg.Proxy != nil {
				u, err := cfg.Proxy(&http.Request{})
				if err != nil {
					t.Fatal(err)
				}
				proxy = u.String()
			}
			tt.check(t, cfg.Host, cfg.BearerToken, cfg.Insecure, cfg.CAData, proxy)
		})
	}
}
