package registration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
)

func newCA(t *testing.T, name string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: name}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
}

// serveClusterInfo serves a hub's discovery ConfigMap whose CA data is bundle.
func serveClusterInfo(t *testing.T, bundle []byte) string {
	t.Helper()
	info := clientcmdapi.NewConfig()
	info.Clusters[""] = &clientcmdapi.Cluster{Server: "https://hub", CertificateAuthorityData: bundle}
	kubeconfig, err := clientcmd.Write(*info)
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ClusterInfoName, Namespace: ClusterInfoNamespace}, Data: map[string]string{"kubeconfig": string(kubeconfig)}}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/namespaces/"+ClusterInfoNamespace+"/configmaps/"+ClusterInfoName {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(cm)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestDiscoverCAPinsEveryCertificate: a bundle is trusted only when each of its certificates is pinned, so a
// certificate slipped in beside the hub's CA cannot make the agent trust its holder.
func TestDiscoverCAPinsEveryCertificate(t *testing.T) {
	hubCA, other := newCA(t, "hub"), newCA(t, "intruder")
	bundle := append(append([]byte{}, hubCA...), other...)
	hubHash, err := CAHashes(hubCA)
	if err != nil {
		t.Fatal(err)
	}
	otherHash, err := CAHashes(other)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		bundle  []byte
		pins    []string
		wantErr string
	}{
		{"one certificate, pinned", hubCA, hubHash, ""},
		{"two certificates, one pinned", bundle, hubHash, "does not match --ca-cert-hash"},
		{"two certificates, the other one pinned", bundle, otherHash, "does not match --ca-cert-hash"},
		{"two certificates, both pinned", bundle, append(append([]string{}, hubHash...), otherHash...), ""},
		{"no pin", hubCA, nil, "--ca-cert-hash is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DiscoverCA(context.Background(), serveClusterInfo(t, tt.bundle), tt.pins)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(tt.bundle) {
				t.Fatal("the trusted bundle is not the pinned one")
			}
		})
	}
}
