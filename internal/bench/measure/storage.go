package measure

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/flotilla-io/flotilla/internal/controlplane"
)

// StoredKinds are the kinds whose size in etcd `bench scale` reports, by their keys under the hub's default
// --etcd-prefix: what grows with templates × clusters (Works), with templates (bindings), and with clusters.
var StoredKinds = []struct{ Name, Prefix string }{
	{"Work", "/registry/work.flotilla.io/works/"},
	{"ResourceBinding", "/registry/work.flotilla.io/resourcebindings/"},
	{"Cluster", "/registry/cluster.flotilla.io/clusters/"},
	{"Lease", "/registry/leases/"},
}

// Storage is the hub's etcd at steady state.
type Storage struct {
	// DBSizeBytes is the size of etcd's database file; DBSizeInUseBytes the part of it that holds data,
	// history not yet compacted included.
	DBSizeBytes      int64 `json:"dbSizeBytes"`
	DBSizeInUseBytes int64 `json:"dbSizeInUseBytes"`
	// Kinds is, per kind, the current version of each object as etcd stores it (Works encrypted).
	Kinds map[string]StoredKind `json:"kinds"`
}

// StoredKind is what the objects of one kind take in etcd.
type StoredKind struct {
	Objects        int     `json:"objects"`
	Bytes          int64   `json:"bytes"`
	BytesPerObject float64 `json:"bytesPerObject"`
}

// etcdServing is the hub's progress line that says where its embedded etcd serves.
var etcdServing = regexp.MustCompile(`etcd serving at (https://\S+)`)

// StorageOf reads the embedded etcd of the hub whose data directory is hubDir, as its kube-apiserver
// does (with the hub's etcd client certificate), and sums the stored size of each kind's objects.
func StorageOf(ctx context.Context, hubDir, hubOutput string) (Storage, error) {
	out, err := os.ReadFile(hubOutput)
	if err != nil {
		return Storage{}, err
	}
	m := etcdServing.FindSubmatch(out)
	if m == nil {
		return Storage{}, fmt.Errorf("%s does not say where the hub's etcd serves", hubOutput)
	}
	endpoint := string(m[1])
	files := controlplane.PKI{Dir: filepath.Join(hubDir, "pki")}.EtcdClientTLS()
	tlsConfig, err := transport.TLSInfo{CertFile: files.CertFile, KeyFile: files.KeyFile, TrustedCAFile: files.CAFile}.ClientConfig()
	if err != nil {
		return Storage{}, err
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, TLS: tlsConfig, DialTimeout: 5 * time.Second, Context: ctx})
	if err != nil {
		return Storage{}, err
	}
	defer c.Close()
	status, err := c.Status(ctx, endpoint)
	if err != nil {
		return Storage{}, fmt.Errorf("etcd status: %w", err)
	}
	s := Storage{DBSizeBytes: status.DbSize, DBSizeInUseBytes: status.DbSizeInUse, Kinds: map[string]StoredKind{}}
	for _, k := range StoredKinds {
		size, err := storedSize(ctx, c, k.Prefix)
		if err != nil {
			return Storage{}, fmt.Errorf("reading %s: %w", k.Prefix, err)
		}
		s.Kinds[k.Name] = size
	}
	return s, nil
}

// storedSize sums the values under prefix, a page at a time.
func storedSize(ctx context.Context, c *clientv3.Client, prefix string) (StoredKind, error) {
	var size StoredKind
	key, end := prefix, clientv3.GetPrefixRangeEnd(prefix)
	for {
		resp, err := c.Get(ctx, key, clientv3.WithRange(end), clientv3.WithLimit(1000))
		if err != nil {
			return StoredKind{}, err
		}
		for _, kv := range resp.Kvs {
			size.Objects++
			size.Bytes += int64(len(kv.Value))
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		key = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	if size.Objects > 0 {
		size.BytesPerObject = float64(size.Bytes) / float64(size.Objects)
	}
	return size, nil
}
