package controlplane

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// Lifetimes of the generated certificates. The CAs outlive every leaf; leaf certificates are reissued on start
// once less than a third of their life is left, so a hub that restarts now and then never serves an expired one.
const (
	caLifetime   = 10 * 365 * 24 * time.Hour
	leafLifetime = 365 * 24 * time.Hour
)

// Identities of the clients the control plane issues certificates for.
const (
	AdminUser             = "flotilla-admin"
	controllerManagerUser = "system:kube-controller-manager"
	schedulerUser         = "system:kube-scheduler"
	frontProxyClientUser  = "front-proxy-client"
)

// PKI is the set of keys and certificates of one control plane, kept as files under one directory.
type PKI struct {
	Dir string
}

// File names inside the PKI directory.
func (p PKI) path(name string) string       { return filepath.Join(p.Dir, name) }
func (p PKI) CACert() string                { return p.path("ca.crt") }
func (p PKI) CAKey() string                 { return p.path("ca.key") }
func (p PKI) ServingCert() string           { return p.path("apiserver.crt") }
func (p PKI) ServingKey() string            { return p.path("apiserver.key") }
func (p PKI) FrontProxyCACert() string      { return p.path("front-proxy-ca.crt") }
func (p PKI) FrontProxyCAKey() string       { return p.path("front-proxy-ca.key") }
func (p PKI) FrontProxyClientCert() string  { return p.path("front-proxy-client.crt") }
func (p PKI) FrontProxyClientKey() string   { return p.path("front-proxy-client.key") }
func (p PKI) ServiceAccountKey() string     { return p.path("sa.key") }
func (p PKI) ServiceAccountPub() string     { return p.path("sa.pub") }
func (p PKI) ClientCert(user string) string { return p.path(fileSafe(user) + ".crt") }
func (p PKI) ClientKey(user string) string  { return p.path(fileSafe(user) + ".key") }

// etcd has a CA of its own: the cluster CA also signs agents' certificates (CSRs), and none of those may reach
// etcd. The embedded etcd serves and talks to its peers with the server certificate; kube-apiserver is its
// only client.
func (p PKI) EtcdCACert() string     { return p.path("etcd-ca.crt") }
func (p PKI) EtcdCAKey() string      { return p.path("etcd-ca.key") }
func (p PKI) EtcdServerCert() string { return p.path("etcd-server.crt") }
func (p PKI) EtcdServerKey() string  { return p.path("etcd-server.key") }
func (p PKI) EtcdClientCert() string { return p.path("apiserver-etcd-client.crt") }
func (p PKI) EtcdClientKey() string  { return p.path("apiserver-etcd-client.key") }

// EtcdServerTLS is the identity the embedded etcd serves clients and peers with.
func (p PKI) EtcdServerTLS() EtcdTLS {
	return EtcdTLS{CAFile: p.EtcdCACert(), CertFile: p.EtcdServerCert(), KeyFile: p.EtcdServerKey()}
}

// EtcdClientTLS is the identity kube-apiserver reaches the embedded etcd with.
func (p PKI) EtcdClientTLS() EtcdTLS {
	return EtcdTLS{CAFile: p.EtcdCACert(), CertFile: p.EtcdClientCert(), KeyFile: p.EtcdClientKey()}
}

func fileSafe(user string) string {
	out := []rune(user)
	for i, r := range out {
		if r == ':' || r == '/' {
			out[i] = '-'
		}
	}
	return string(out)
}

// Ensure creates whatever part of the PKI is missing and reissues leaf certificates that are near expiry or,
// for the serving certificate, that do not cover every requested name. Existing CAs are never replaced: that
// would strand every client that trusts them.
func (p PKI) Ensure(hosts []string) error {
	if err := os.MkdirAll(p.Dir, 0o700); err != nil {
		return err
	}
	ca, caKey, err := p.ensureCA(p.CACert(), p.CAKey(), "flotilla-ca")
	if err != nil {
		return err
	}
	fpCA, fpKey, err := p.ensureCA(p.FrontProxyCACert(), p.FrontProxyCAKey(), "flotilla-front-proxy-ca")
	if err != nil {
		return err
	}
	if err := p.ensureLeaf(p.ServingCert(), p.ServingKey(), ca, caKey, leafSpec{cn: "flotilla-apiserver", hosts: hosts, server: true}); err != nil {
		return err
	}
	if err := p.ensureLeaf(p.FrontProxyClientCert(), p.FrontProxyClientKey(), fpCA, fpKey, leafSpec{cn: frontProxyClientUser}); err != nil {
		return err
	}
	etcdCA, etcdKey, err := p.ensureCA(p.EtcdCACert(), p.EtcdCAKey(), "flotilla-etcd-ca")
	if err != nil {
		return err
	}
	// etcd listens on loopback only; its certificate serves clients and authenticates it to its peers.
	etcdServer := leafSpec{cn: "flotilla-etcd", hosts: []string{"localhost", "127.0.0.1"}, server: true, client: true}
	if err := p.ensureLeaf(p.EtcdServerCert(), p.EtcdServerKey(), etcdCA, etcdKey, etcdServer); err != nil {
		return err
	}
	if err := p.ensureLeaf(p.EtcdClientCert(), p.EtcdClientKey(), etcdCA, etcdKey, leafSpec{cn: "kube-apiserver-etcd-client"}); err != nil {
		return err
	}
	if err := p.ensureEncryptionKey(); err != nil {
		return err
	}
	for _, c := range []leafSpec{
		{cn: AdminUser, orgs: []string{"system:masters"}},
		{cn: controllerManagerUser},
		{cn: schedulerUser},
	} {
		if err := p.ensureLeaf(p.ClientCert(c.cn), p.ClientKey(c.cn), ca, caKey, c); err != nil {
			return err
		}
	}
	return p.ensureServiceAccountKey()
}

// EnsureClientCert issues (or reissues, when near expiry or signed by another CA) a client certificate from
// the cluster CA for user, in no group: what that user may do is up to RBAC, and its requests are subject to
// API Priority and Fairness, unlike the admin's (system:masters is exempt from both).
func (p PKI) EnsureClientCert(user string) error {
	ca, caKey, err := loadPair(p.CACert(), p.CAKey())
	if err != nil {
		return fmt.Errorf("reading CA %s: %w", p.CACert(), err)
	}
	return p.ensureLeaf(p.ClientCert(user), p.ClientKey(user), ca, caKey, leafSpec{cn: user})
}

// EnsureServingCert issues (or reissues, when near expiry, signed by another CA or missing a host) a serving
// certificate from the cluster CA for hosts, such as that of an API the hub process serves besides
// kube-apiserver. Hubs that share one API share its PKI, so whichever of them registered that API, clients
// verify it with the same CA.
func (p PKI) EnsureServingCert(certFile, keyFile, cn string, hosts []string) error {
	ca, caKey, err := loadPair(p.CACert(), p.CAKey())
	if err != nil {
		return fmt.Errorf("reading CA %s: %w", p.CACert(), err)
	}
	return p.ensureLeaf(certFile, keyFile, ca, caKey, leafSpec{cn: cn, hosts: hosts, server: true})
}

func (p PKI) ensureCA(certFile, keyFile, cn string) (*x509.Certificate, crypto.Signer, error) {
	if cert, key, err := loadPair(certFile, keyFile); err == nil {
		return cert, key, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("reading CA %s: %w", certFile, err)
	}
	cert, key, err := NewCA(cn)
	if err != nil {
		return nil, nil, err
	}
	return cert, key, writePair(certFile, keyFile, cert, key)
}

// NewCA returns a new CA certificate and its key, valid for caLifetime: for a CA kept elsewhere than in a
// PKI directory, such as that of the hub's admission webhook over an existing cluster.
func NewCA(cn string) (*x509.Certificate, crypto.Signer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(caLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

// NewServingCert issues, from ca, a serving certificate for hosts (names or IPs) valid for leafLifetime.
func NewServingCert(ca *x509.Certificate, caKey crypto.Signer, cn string, hosts []string) (*x509.Certificate, crypto.Signer, error) {
	return newLeaf(ca, caKey, leafSpec{cn: cn, hosts: hosts, server: true})
}

// ServingCertCurrent reports whether a serving certificate is signed by ca, has a third of its life left and
// covers every host: if not, it is time to issue another.
func ServingCertCurrent(cert, ca *x509.Certificate, hosts []string) bool {
	return leafCurrent(cert, ca, leafSpec{hosts: hosts, server: true})
}

type leafSpec struct {
	cn     string
	orgs   []string
	hosts  []string
	server bool
	// client, with server, lets a serving certificate authenticate as a client too (etcd's peer connections).
	client bool
}

func (p PKI) ensureLeaf(certFile, keyFile string, ca *x509.Certificate, caKey crypto.Signer, spec leafSpec) error {
	if cert, _, err := loadPair(certFile, keyFile); err == nil && leafCurrent(cert, ca, spec) {
		return nil
	}
	cert, key, err := newLeaf(ca, caKey, spec)
	if err != nil {
		return err
	}
	return writePair(certFile, keyFile, cert, key)
}

func newLeaf(ca *x509.Certificate, caKey crypto.Signer, spec leafSpec) (*x509.Certificate, crypto.Signer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: spec.cn, Organization: spec.orgs},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(leafLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if spec.server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		if spec.client {
			tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
		}
		for _, h := range spec.hosts {
			if ip := net.ParseIP(h); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			} else {
				tmpl.DNSNames = append(tmpl.DNSNames, h)
			}
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

// leafCurrent reports whether an existing leaf is signed by ca, has a third of its life left, and (for a
// serving certificate) covers every host.
func leafCurrent(cert, ca *x509.Certificate, spec leafSpec) bool {
	if cert.CheckSignatureFrom(ca) != nil {
		return false
	}
	life := cert.NotAfter.Sub(cert.NotBefore)
	if time.Until(cert.NotAfter) < life/3 {
		return false
	}
	for _, h := range spec.hosts {
		if ip := net.ParseIP(h); ip != nil {
			if !slices.ContainsFunc(cert.IPAddresses, ip.Equal) {
				return false
			}
		} else if !slices.Contains(cert.DNSNames, h) {
			return false
		}
	}
	return true
}

func (p PKI) ensureServiceAccountKey() error {
	if _, err := os.Stat(p.ServiceAccountKey()); err == nil {
		return nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return err
	}
	if err := writeFileAtomic(p.ServiceAccountPub(), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o600); err != nil {
		return err
	}
	return writeFileAtomic(p.ServiceAccountKey(), keyPEM, 0o600)
}

func loadPair(certFile, keyFile string) (*x509.Certificate, crypto.Signer, error) {
	certs, err := certutil.CertsFromFile(certFile)
	if err != nil {
		if _, statErr := os.Stat(certFile); errors.Is(statErr, os.ErrNotExist) {
			return nil, nil, os.ErrNotExist
		}
		return nil, nil, err
	}
	key, err := keyutil.PrivateKeyFromFile(keyFile)
	if err != nil {
		return nil, nil, err
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, nil, fmt.Errorf("%s does not hold a signing key", keyFile)
	}
	return certs[0], signer, nil
}

func writePair(certFile, keyFile string, cert *x509.Certificate, key crypto.Signer) error {
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(keyFile, keyPEM, 0o600); err != nil {
		return err
	}
	return writeFileAtomic(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), 0o644)
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	return n
}

// writeFileAtomic writes data to a temporary file beside path and renames it into place, so a reader (or a
// crash) never sees a half-written file.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
