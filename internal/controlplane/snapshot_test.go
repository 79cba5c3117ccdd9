package controlplane

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestSnapshotRestoreForceKeepsReplacedData saves a snapshot of a member on a data directory whose lock is
// held (a running hub), and restores it: refused while the lock is held, refused over etcd data without force;
// with force the replaced data is kept aside, and the restored member serves the keys of the snapshot, not the
// key written after it, at revisions above any it served before.
func TestSnapshotRestoreForceKeepsReplacedData(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dataDir := t.TempDir()
	p := PKI{Dir: filepath.Join(dataDir, "pki")}
	if err := p.Ensure([]string{"localhost", "127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	if err := p.ensureEncryptionKey(); err != nil {
		t.Fatal(err)
	}
	lock, err := lockDataDir(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	e := startEtcdIn(t, p, filepath.Join(dataDir, "etcd"))
	if err := os.WriteFile(filepath.Join(dataDir, etcdEndpointFile), []byte(e.ClientURL+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	client := p.EtcdClientTLS()
	tlsConfig, err := transport.TLSInfo{TrustedCAFile: client.CAFile, CertFile: client.CertFile, KeyFile: client.KeyFile}.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	c := etcdClient(t, e.ClientURL, tlsConfig)
	if _, err := c.Put(ctx, "/registry/kept", "v"); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "snap.db")
	if _, err := SaveSnapshot(ctx, dataDir, file); err != nil {
		t.Fatal(err)
	}
	put, err := c.Put(ctx, "/registry/after", "v")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := RestoreSnapshot(file, dataDir, true); !errors.Is(err, ErrDataDirInUse) {
		t.Fatalf("restore while the data directory is locked: %v", err)
	}
	e.Close()
	lock.Close()

	if _, err := RestoreSnapshot(file, dataDir, false); err == nil || !strings.Contains(err.Error(), "already holds etcd data") {
		t.Fatalf("restore over etcd data without force: %v", err)
	}
	kept, err := RestoreSnapshot(file, dataDir, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(kept, "member")); err != nil {
		t.Fatalf("replaced etcd data not kept: %v", err)
	}

	e = startEtcdIn(t, p, filepath.Join(dataDir, "etcd"))
	defer e.Close()
	c = etcdClient(t, e.ClientURL, tlsConfig)
	got, err := c.Get(ctx, "/registry/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Kvs) != 1 || string(got.Kvs[0].Key) != "/registry/kept" {
		t.Fatalf("restored keys %v, want only /registry/kept", got.Kvs)
	}
	if got.Header.Revision <= put.Header.Revision || got.Header.Revision < restoreRevisionBump {
		t.Fatalf("restored revision %d not raised past %d", got.Header.Revision, put.Header.Revision)
	}
}
