package controlplane

import (
	"crypto/x509"
	"os"
	"slices"
	"testing"

	certutil "k8s.io/client-go/util/cert"
)

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	certs, err := certutil.CertsFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return certs[0]
}

func TestPKIEnsure(t *testing.T) {
	p := PKI{Dir: t.TempDir()}
	if err := p.Ensure([]string{"localhost", "127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	ca := readCert(t, p.CACert())
	if !ca.IsCA {
		t.Fatal("ca.crt is not a CA")
	}
	serving := readCert(t, p.ServingCert())
	if err := serving.CheckSignatureFrom(ca); err != nil {
		t.Fatalf("serving certificate not signed by the CA: %v", err)
	}
	admin := readCert(t, p.ClientCert(AdminUser))
	if admin.Subject.CommonName != AdminUser || !slices.Contains(admin.Subject.Organization, "system:masters") {
		t.Fatalf("admin identity = %v", admin.Subject)
	}
	for _, f := range []string{p.FrontProxyCACert(), p.FrontProxyClientCert(), p.ServiceAccountKey(), p.ServiceAccountPub(),
		p.ClientCert(controllerManagerUser), p.ClientCert(schedulerUser)} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("missing %s", f)
		}
	}
	if info, _ := os.Stat(p.CAKey()); info.Mode().Perm() != 0o600 {
		t.Errorf("ca.key mode = %v, want 0600", info.Mode().Perm())
	}

	// A second start with the same hosts changes nothing; a new SAN reissues only the serving certificate.
	if err := p.Ensure([]string{"localhost", "127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	if !readCert(t, p.ServingCert()).Equal(serving) {
		t.Fatal("serving certificate reissued without a reason")
	}
	if err := p.Ensure([]string{"localhost", "127.0.0.1", "hub.example.com", "10.1.2.3"}); err != nil {
		t.Fatal(err)
	}
	reissued := readCert(t, p.ServingCert())
	if reissued.Equal(serving) || !slices.Contains(reissued.DNSNames, "hub.example.com") || len(reissued.IPAddresses) != 2 {
		t.Fatalf("serving certificate not reissued for new SANs: %v %v", reissued.DNSNames, reissued.IPAddresses)
	}
	if !readCert(t, p.CACert()).Equal(ca) {
		t.Fatal("the CA changed: every client would be stranded")
	}
	if !readCert(t, p.ClientCert(AdminUser)).Equal(admin) {
		t.Fatal("admin certificate reissued without a reason")
	}

}
