package controlplane

import (
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// StableIdentity returns the identity kept in dataDir/file, creating it (hostname_uuid) on first use. It
// names what the data directory holds across restarts; for a lease holder see ProcessIdentity.
func StableIdentity(dataDir, file string) (string, error) {
	path := filepath.Join(dataDir, file)
	if data, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(data))) > 0 {
		return strings.TrimSpace(string(data)), nil
	}
	host, _ := os.Hostname()
	id := host + "_" + string(uuid.NewUUID())
	return id, writeFileAtomic(path, []byte(id+"\n"), 0o600)
}

// ProcessIdentity returns an identity for this process to hold leases under: the data directory's stable
// identity, an underscore and a random suffix. Two processes never share it, not even one on a copy of
// another's data directory, where a shared identity would let both believe they hold the same lease. The
// stable part is returned too: it tells which directory (or copy of it) a holder ran on.
func ProcessIdentity(dataDir, file string) (stable, identity string, err error) {
	if stable, err = StableIdentity(dataDir, file); err != nil {
		return "", "", err
	}
	return stable, stable + "_" + rand.String(8), nil
}
