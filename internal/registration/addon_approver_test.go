package registration

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/utils/ptr"
)

// addOnCSR is a CSR for subject, with the DNS names and usages given.
func addOnCSR(t *testing.T, subject pkix.Name, dnsNames []string, usages ...certificatesv1.KeyUsage) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject, DNSNames: dnsNames}, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(usages) == 0 {
		usages = []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth, certificatesv1.UsageDigitalSignature}
	}
	return &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{
		Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
		SignerName: certificatesv1.KubeAPIServerClientSignerName, Usages: usages,
	}}
}

// TestParseAddOnCSR: an add-on agent's CSR asks for exactly its client certificate; an agent's CSR is not one.
func TestParseAddOnCSR(t *testing.T) {
	const user, group = "system:flotilla:addon:obs:m1", "system:flotilla:addon:obs"
	tests := []struct {
		name    string
		csr     *certificatesv1.CertificateSigningRequest
		wantErr string
	}{
		{"an add-on agent's", addOnCSR(t, pkix.Name{CommonName: user, Organization: []string{group}}, nil), ""},
		{"an agent's", addOnCSR(t, pkix.Name{CommonName: "system:flotilla:agent:m1:0123456789abcdef0123", Organization: []string{AgentGroup}}, nil), errNotAddOnCSR.Error()},
		{"extra group", addOnCSR(t, pkix.Name{CommonName: user, Organization: []string{group, "system:masters"}}, nil), "must have organization system:flotilla:addon:obs, not"},
		{"another add-on's group", addOnCSR(t, pkix.Name{CommonName: user, Organization: []string{"system:flotilla:addon:other"}}, nil), "organization"},
		{"alternative names", addOnCSR(t, pkix.Name{CommonName: user, Organization: []string{group}}, []string{"hub.example"}), "no subject alternative names"},
		{"server usage", addOnCSR(t, pkix.Name{CommonName: user, Organization: []string{group}}, nil, certificatesv1.UsageServerAuth), "client authentication only"},
		{"bad cluster name", addOnCSR(t, pkix.Name{CommonName: "system:flotilla:addon:obs:M_1", Organization: []string{group}}, nil), "cluster"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := parseAddOnCSR(tt.csr)
			if tt.wantErr == "" {
				if err != nil || r.addon != "obs" || r.cluster != "m1" || r.user != user {
					t.Fatalf("parseAddOnCSR = %+v, %v", r, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want %q", err, tt.wantErr)
			}
			if tt.wantErr != errNotAddOnCSR.Error() && errors.Is(err, errNotAddOnCSR) {
				t.Fatalf("a bad add-on CSR was taken for another kind: %v", err)
			}
		})
	}
}

// TestCheckAddOnLifetime: add-on agents get at most a day, or less when the hub grants its agents less.
func TestCheckAddOnLifetime(t *testing.T) {
	seconds := func(d time.Duration) *int32 { return ptr.To(int32(d.Seconds())) }
	tests := []struct {
		name    string
		max     time.Duration
		asked   *int32
		wantErr string
	}{
		{"a day", 720 * time.Hour, seconds(24 * time.Hour), ""},
		{"more than a day", 720 * time.Hour, seconds(25 * time.Hour), "at most 24h0m0s"},
		{"more than the hub's cap", time.Hour, seconds(2 * time.Hour), "at most 1h0m0s"},
		{"no lifetime", 720 * time.Hour, nil, "names no lifetime"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &Approver{MaxCertTTL: tt.max}
			err := a.checkAddOnLifetime(&certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{ExpirationSeconds: tt.asked}})
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error = %v, want %q", err, tt.wantErr)
			}
		})
	}
	if got := AddOnCertTTL(7 * 24 * time.Hour); got != MaxAddOnCertTTL {
		t.Errorf("AddOnCertTTL(7d) = %s", got)
	}
	if got := AddOnCertTTL(time.Hour); got != time.Hour {
		t.Errorf("AddOnCertTTL(1h) = %s", got)
	}
}

// TestCurrentCredential: a credential Secret is kept until a fifth of its certificate's life is left, and only
// while it is of the right user for the hub's address and CA.
func TestCurrentCredential(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	notBefore := time.Now().Truncate(time.Second)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "system:flotilla:addon:obs:m1"},
		NotBefore: notBefore, NotAfter: notBefore.Add(10 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	ca := []byte("ca")
	data, err := hubKubeconfig("https://hub:6443", ca, certPEM, key)
	if err != nil {
		t.Fatal(err)
	}
	renewAt, ok := currentCredential(data, "https://hub:6443", ca, "system:flotilla:addon:obs:m1", 0)
	if !ok || !renewAt.Equal(notBefore.Add(8*time.Hour)) {
		t.Fatalf("currentCredential = %s, %v; want %s", renewAt, ok, notBefore.Add(8*time.Hour))
	}
	if renewAt, _ := currentCredential(data, "https://hub:6443", ca, "system:flotilla:addon:obs:m1", time.Hour); !renewAt.Equal(notBefore.Add(9 * time.Hour)) {
		t.Errorf("renewing an hour before expiry: at %s, want %s", renewAt, notBefore.Add(9*time.Hour))
	}
	if renewAt, _ := currentCredential(data, "https://hub:6443", ca, "system:flotilla:addon:obs:m1", 48*time.Hour); !renewAt.Equal(notBefore.Add(8 * time.Hour)) {
		t.Errorf("renewing longer before expiry than the certificate lives: at %s, want a fifth of its life before", renewAt)
	}
	for what, check := range map[string]func() bool{
		"another user": func() bool {
			_, ok := currentCredential(data, "https://hub:6443", ca, "system:flotilla:addon:obs:m2", 0)
			return ok
		},
		"another hub": func() bool {
			_, ok := currentCredential(data, "https://other:6443", ca, "system:flotilla:addon:obs:m1", 0)
			return ok
		},
		"another CA": func() bool {
			_, ok := currentCredential(data, "https://hub:6443", []byte("x"), "system:flotilla:addon:obs:m1", 0)
			return ok
		},
		"no kubeconfig": func() bool {
			_, ok := currentCredential(nil, "https://hub:6443", ca, "system:flotilla:addon:obs:m1", 0)
			return ok
		},
		"not a kubeconfig": func() bool {
			_, ok := currentCredential([]byte("{"), "https://hub:6443", ca, "system:flotilla:addon:obs:m1", 0)
			return ok
		},
	} {
		if check() {
			t.Errorf("a credential of %s is taken for current", what)
		}
	}
}
