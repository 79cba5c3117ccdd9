package controlplane

import (
	"context"
	"crypto/tls"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// startTLSEtcd starts an embedded etcd member that serves with the etcd certificates of a fresh PKI.
func startTLSEtcd(t *testing.T) (*Etcd, PKI) {
	t.Helper()
	p := PKI{Dir: t.TempDir()}
	if err := p.Ensure([]string{"localhost", "127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	e := startEtcdIn(t, p, filepath.Join(t.TempDir(), "etcd"))
	t.Cleanup(e.Close)
	return e, p
}

// startEtcdIn starts an embedded etcd member on dir that serves with the etcd certificates of p.
func startEtcdIn(t *testing.T, p PKI, dir string) *Etcd {
	t.Helper()
	ports, err := FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	serverTLS := p.EtcdServerTLS()
	e, err := StartEtcd(EtcdConfig{
		Name: embeddedEtcdName, Dir: dir,
		ClientURL: "https://127.0.0.1:" + strconv.Itoa(ports[0]), PeerURL: "https://127.0.0.1:" + strconv.Itoa(ports[1]),
		LogFile: filepath.Join(t.TempDir(), "etcd.log"), TLS: &serverTLS,
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func etcdClient(t *testing.T, endpoint string, tlsConfig *tls.Config) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, TLS: tlsConfig, DialTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestEtcdServesOnlyClientCertificates: the member answers a client with a certificate from the etcd CA, and
// refuses plain HTTP, TLS without a client certificate, and a certificate from the cluster CA (which also
// signs agents' certificates).
func TestEtcdServesOnlyClientCertificates(t *testing.T) {
	e, p := startTLSEtcd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	if _, err := http.Get(strings.Replace(e.ClientURL, "https://", "http://", 1) + "/version"); err == nil {
		t.Fatal("etcd answered plain HTTP")
	}
	plain := etcdClient(t, strings.Replace(e.ClientURL, "https://", "http://", 1), nil)
	short, cancelShort := context.WithTimeout(ctx, 5*time.Second)
	_, err := plain.Get(short, "/registry", clientv3.WithPrefix())
	cancelShort()
	if err == nil {
		t.Fatal("etcd served a plain-HTTP client")
	}
	for name, info := range map[string]transport.TLSInfo{
		"TLS without a client certificate": {TrustedCAFile: p.EtcdCACert()},
		"a certificate of the cluster CA":  {TrustedCAFile: p.EtcdCACert(), CertFile: p.ClientCert(AdminUser), KeyFile: p.ClientKey(AdminUser)},
	} {
		tlsConfig, err := info.ClientConfig()
		if err != nil {
			t.Fatal(err)
		}
		c := etcdClient(t, e.ClientURL, tlsConfig)
		short, cancelShort := context.WithTimeout(ctx, 5*time.Second)
		_, err = c.Get(short, "/registry", clientv3.WithPrefix())
		cancelShort()
		if err == nil {
			t.Fatalf("etcd served a client with %s", name)
		}
	}

	good := p.EtcdClientTLS()
	tlsConfig, err := transport.TLSInfo{TrustedCAFile: good.CAFile, CertFile: good.CertFile, KeyFile: good.KeyFile}.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	c := etcdClient(t, e.ClientURL, tlsConfig)
	if _, err := c.Put(ctx, "/registry/x", "y"); err != nil {
		t.Fatalf("kube-apiserver's identity is refused: %v", err)
	}
	// The quota is in force, not etcd's default of 2 GiB.
	status, err := c.Status(ctx, e.ClientURL)
	if err != nil {
		t.Fatal(err)
	}
	if status.DbSizeQuota != EtcdQuotaBytes {
		t.Fatalf("etcd quota = %d bytes, want %d", status.DbSizeQuota, EtcdQuotaBytes)
	}
	if got := e.server.Config().AutoCompactionMode + " " + e.server.Config().AutoCompactionRetention; got != "periodic "+etcdCompactionRetention {
		t.Fatalf("auto compaction = %q", got)
	}
}

// TestEtcdDefragmentsWhenMostlyFree: after values are deleted and compacted away, the member rewrites its
// file; while most of it is in use, it leaves it alone.
func TestEtcdDefragmentsWhenMostlyFree(t *testing.T) {
	e, p := startTLSEtcd(t)
	defer func(old int64) { etcdDefragMinFree = old }(etcdDefragMinFree)
	etcdDefragMinFree = 1 << 20
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	good := p.EtcdClientTLS()
	tlsConfig, err := transport.TLSInfo{TrustedCAFile: good.CAFile, CertFile: good.CertFile, KeyFile: good.KeyFile}.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	c := etcdClient(t, e.ClientURL, tlsConfig)
	value := strings.Repeat("x", 256<<10)
	for i := range 40 {
		if _, err := c.Put(ctx, "/big/"+strconv.Itoa(i), value); err != nil {
			t.Fatal(err)
		}
	}
	if done, err := e.defragmentIfWasteful(); err != nil || done {
		t.Fatalf("defragmented a file in use (%v, %v)", done, err)
	}
	resp, err := c.Delete(ctx, "/big/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	before := e.dbSize()
	if done, err := e.defragmentIfWasteful(); err != nil || !done {
		t.Fatalf("did not defragment a mostly free file of %d bytes (%v, %v)", before, done, err)
	}
	if after := e.dbSize(); after >= before/2 {
		t.Fatalf("database file %d bytes after defragmentation, %d before", after, before)
	}
}

func TestWasteful(t *testing.T) {
	const mib = 1 << 20
	for _, tt := range []struct {
		size, inUse int64
		want        bool
	}{
		{1000 * mib, 100 * mib, true},
		{1000 * mib, 600 * mib, false},
		{100 * mib, 40 * mib, false}, // half free, but too little to be worth a pause
		{200 * mib, 100 * mib, true},
	} {
		if got := wasteful(tt.size, tt.inUse); got != tt.want {
			t.Errorf("wasteful(%d MiB, %d MiB in use) = %v", tt.size/mib, tt.inUse/mib, got)
		}
	}
}
