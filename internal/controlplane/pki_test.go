package controlplane

import (
	"crypto/x509"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
		p.ClientCert(controllerManagerUser), p.ClientCert(schedulerUser), p.EtcdClientCert(), p.EncryptionKey()} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("missing %s", f)
		}
	}
	// etcd trusts its own CA only: the cluster CA also signs agents' certificates.
	etcdServer := readCert(t, p.EtcdServerCert())
	if etcdServer.CheckSignatureFrom(readCert(t, p.EtcdCACert())) != nil || etcdServer.CheckSignatureFrom(ca) == nil {
		t.Fatal("etcd's serving certificate is not signed by the etcd CA alone")
	}
	for _, f := range []string{p.CAKey(), p.EtcdCAKey(), p.EncryptionKey()} {
		if info, _ := os.Stat(f); info.Mode().Perm() != 0o600 {
			t.Errorf("%s mode = %v, want 0600", f, info.Mode().Perm())
		}
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

// TestEnsureClientCert: an identity issued on demand is signed by the cluster CA, names the user and belongs to
// no group (above all not system:masters, which would exempt it from RBAC and API Priority and Fairness), and
// is kept until it needs renewing.
func TestEnsureClientCert(t *testing.T) {
	p := PKI{Dir: t.TempDir()}
	if err := p.EnsureClientCert("system:flotilla:controllers"); err == nil {
		t.Fatal("a client certificate was issued without a CA")
	}
	if err := p.Ensure([]string{"localhost"}); err != nil {
		t.Fatal(err)
	}
	if err := p.EnsureClientCert("system:flotilla:controllers"); err != nil {
		t.Fatal(err)
	}
	cert := readCert(t, p.ClientCert("system:flotilla:controllers"))
	if err := cert.CheckSignatureFrom(readCert(t, p.CACert())); err != nil {
		t.Fatalf("not signed by the cluster CA: %v", err)
	}
	if cert.Subject.CommonName != "system:flotilla:controllers" || len(cert.Subject.Organization) != 0 {
		t.Fatalf("identity = %v, want the user alone, in no group", cert.Subject)
	}
	if !slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) {
		t.Fatalf("key usage = %v, want client authentication only", cert.ExtKeyUsage)
	}
	if err := p.EnsureClientCert("system:flotilla:controllers"); err != nil {
		t.Fatal(err)
	}
	if !readCert(t, p.ClientCert("system:flotilla:controllers")).Equal(cert) {
		t.Fatal("client certificate reissued without a reason")
	}
}

// TestProcessIdentity: every process gets an identity of its own, also on a copy of a data directory, with
// the directory's stable identity in front.
func TestProcessIdentity(t *testing.T) {
	dir, copied := t.TempDir(), t.TempDir()
	stable, first, err := ProcessIdentity(dir, "hub-id")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "hub-id"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(copied, "hub-id"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, again, _ := ProcessIdentity(dir, "hub-id")
	copyStable, onCopy, _ := ProcessIdentity(copied, "hub-id")
	if first == again || first == onCopy || again == onCopy {
		t.Fatalf("identities repeat: %s %s %s", first, again, onCopy)
	}
	if copyStable != stable || !strings.HasPrefix(first, stable+"_") || !strings.HasPrefix(onCopy, stable+"_") {
		t.Fatalf("stable part %q lost: %s %s", stable, first, onCopy)
	}
}
