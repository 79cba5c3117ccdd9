package controlplane

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"
)

const (
	// embeddedEtcdName is the member name of the embedded etcd; a restored member must carry it.
	embeddedEtcdName = "default"
	// etcdEndpointFile, in the data directory, holds the embedded etcd's client URL: its port is chosen anew
	// on every start, and an online snapshot has to find it.
	etcdEndpointFile = "etcd-endpoint"
	// restoreRevisionBump raises every revision of a restored store past any resourceVersion a client saw
	// before, and the restored history is marked compacted: agents' watches relist instead of waiting for
	// revisions that were lost, or mistaking old objects for new ones.
	restoreRevisionBump = 1_000_000_000
)

// SnapshotInfo describes a saved snapshot.
type SnapshotInfo struct {
	Revision int64
	Keys     int
	Bytes    int64
}

// SaveSnapshot writes a consistent snapshot of the embedded etcd of the hub running on dataDir to file, online,
// through etcd's maintenance API and the etcd client certificate of the hub's PKI.
func SaveSnapshot(ctx context.Context, dataDir, file string) (SnapshotInfo, error) {
	if lock, err := lockDataDir(dataDir); err == nil {
		lock.Close()
		return SnapshotInfo{}, fmt.Errorf("no hub runs on %s: the snapshot is taken from the running hub's etcd; start the hub, or copy %s while it is stopped",
			dataDir, filepath.Join(dataDir, "etcd"))
	} else if !errors.Is(err, ErrDataDirInUse) {
		return SnapshotInfo{}, err
	}
	endpoint, err := os.ReadFile(filepath.Join(dataDir, etcdEndpointFile))
	if errors.Is(err, os.ErrNotExist) {
		return SnapshotInfo{}, fmt.Errorf("the hub on %s runs no embedded etcd (it stores in --etcd-servers or a cluster): back that store up with its own tools", dataDir)
	} else if err != nil {
		return SnapshotInfo{}, err
	}
	pki := PKI{Dir: filepath.Join(dataDir, "pki")}
	tlsInfo := transport.TLSInfo{CertFile: pki.EtcdClientCert(), KeyFile: pki.EtcdClientKey(), TrustedCAFile: pki.EtcdCACert()}
	tlsConfig, err := tlsInfo.ClientConfig()
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("etcd client certificate in %s: %w", pki.Dir, err)
	}
	cfg := clientv3.Config{Endpoints: []string{strings.TrimSpace(string(endpoint))}, TLS: tlsConfig, DialTimeout: 10 * time.Second}
	manager := snapshot.NewV3(zap.NewNop())
	if _, err := manager.Save(ctx, cfg, file); err != nil {
		return SnapshotInfo{}, fmt.Errorf("snapshot of the etcd of %s: %w", dataDir, err)
	}
	status, err := manager.Status(file)
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("reading back %s: %w", file, err)
	}
	return SnapshotInfo{Revision: status.Revision, Keys: status.TotalKey, Bytes: status.TotalSize}, nil
}

// RestoreSnapshot makes the etcd data of dataDir the content of the snapshot file, for the hub's next start.
// It holds the data directory's lock, so it fails while a hub runs there and no hub starts during it. Etcd
// data already there is replaced only with force, and then kept aside (its path is returned), never deleted.
//
// The snapshot holds Secrets and Works encrypted with DATA_DIR/pki/encryption.key, and the objects' trust in
// the hub's CAs: the PKI of the hub the snapshot came from must be in dataDir before the restore.
func RestoreSnapshot(file, dataDir string, force bool) (kept string, err error) {
	if _, err := os.Stat(file); err != nil {
		return "", err
	}
	pki := PKI{Dir: filepath.Join(dataDir, "pki")}
	if _, err := os.Stat(pki.EncryptionKey()); err != nil {
		return "", fmt.Errorf("%w: Secrets and Works in the snapshot are encrypted with the encryption.key of the hub it came from; copy that hub's pki directory to %s first",
			err, pki.Dir)
	}
	lock, err := lockDataDir(dataDir)
	if err != nil {
		return "", err
	}
	defer lock.Close()

	etcdDir := filepath.Join(dataDir, "etcd")
	entries, err := os.ReadDir(etcdDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	if len(entries) > 0 && !force {
		return "", fmt.Errorf("%s already holds etcd data: restore replaces it only with --force (it is then kept aside)", etcdDir)
	}
	// Restored beside the live directory and swapped in only once complete: a failed restore leaves the data
	// directory as it was.
	restoring := etcdDir + ".restoring"
	if err := os.RemoveAll(restoring); err != nil {
		return "", err
	}
	// A member alone never dials its peers, and the hub picks new ports on every start anyway.
	peerURL := "https://127.0.0.1:2380"
	err = snapshot.NewV3(zap.NewNop()).Restore(snapshot.RestoreConfig{
		SnapshotPath:        file,
		Name:                embeddedEtcdName,
		OutputDataDir:       restoring,
		PeerURLs:            []string{peerURL},
		InitialCluster:      embeddedEtcdName + "=" + peerURL,
		InitialClusterToken: etcdClusterToken,
		RevisionBump:        restoreRevisionBump,
		MarkCompacted:       true,
	})
	if err != nil {
		_ = os.RemoveAll(restoring)
		return "", fmt.Errorf("restoring %s: %w", file, err)
	}
	if len(entries) > 0 {
		kept = etcdDir + ".before-restore-" + time.Now().UTC().Format("20060102T150405Z")
		if err := os.Rename(etcdDir, kept); err != nil {
			return "", err
		}
	} else if err := os.RemoveAll(etcdDir); err != nil { // an empty directory
		return "", err
	}
	return kept, os.Rename(restoring, etcdDir)
}
