package measure

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/flotilla-io/flotilla/internal/controlplane"
)

// TestStorageOfSumsEachKind: StorageOf finds a hub's etcd from its output, reads it with the hub's
// etcd client certificate, and counts every object of each kind and its stored bytes, over more than one
// page, without counting keys of other kinds that share a prefix's beginning.
func TestStorageOfSumsEachKind(t *testing.T) {
	hubDir := t.TempDir()
	pki := controlplane.PKI{Dir: filepath.Join(hubDir, "pki")}
	if err := pki.Ensure([]string{"localhost", "127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	ports, err := controlplane.FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	serverTLS := pki.EtcdServerTLS()
	e, err := controlplane.StartEtcd(controlplane.EtcdConfig{
		Name: "default", Dir: filepath.Join(hubDir, "etcd"),
		ClientURL: "https://127.0.0.1:" + strconv.Itoa(ports[0]), PeerURL: "https://127.0.0.1:" + strconv.Itoa(ports[1]),
		LogFile: filepath.Join(hubDir, "etcd.log"), TLS: &serverTLS,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	output := filepath.Join(hubDir, "hub.out")
	line := "[  0.61s] etcd serving at " + e.ClientURL + " (TLS, client certificates of " + pki.EtcdCACert() + ")\n"
	if err := os.WriteFile(output, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}

	files := pki.EtcdClientTLS()
	tlsConfig, err := transport.TLSInfo{CertFile: files.CertFile, KeyFile: files.KeyFile, TrustedCAFile: files.CAFile}.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{e.ClientURL}, TLS: tlsConfig, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	put := func(key string, size int) {
		if _, err := c.Put(ctx, key, strings.Repeat("x", size)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 1500 {
		put(fmt.Sprintf("/registry/work.flotilla.io/works/flotilla-cluster-c%d/w", i), 100)
	}
	put("/registry/work.flotilla.io/resourcebindings/default/a", 300)
	put("/registry/work.flotilla.io/resourcebindings/default/b", 500)
	put("/registry/work.flotilla.io/worksets/default/not-a-work", 10000)

	s, err := StorageOf(ctx, hubDir, output)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]StoredKind{
		"Work":            {Objects: 1500, Bytes: 150000, BytesPerObject: 100},
		"ResourceBinding": {Objects: 2, Bytes: 800, BytesPerObject: 400},
		"Cluster":         {},
	}
	for kind, w := range want {
		if got := s.Kinds[kind]; got != w {
			t.Errorf("%s: %+v, want %+v", kind, got, w)
		}
	}
	if s.DBSizeBytes <= 0 || s.DBSizeInUseBytes <= 0 {
		t.Errorf("database size %d, in use %d", s.DBSizeBytes, s.DBSizeInUseBytes)
	}
}
