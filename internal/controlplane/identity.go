package controlplane

import (
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/util/uuid"
)

// StableIdentity returns the identity kept in dataDir/file, creating it (hostname_uuid) on first use. A
// process that holds leases under this identity takes them back at once after a restart instead of waiting
// for them to expire.
func StableIdentity(dataDir, file string) (string, error) {
	path := filepath.Join(dataDir, file)
	if data, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(data))) > 0 {
		return strings.TrimSpace(string(data)), nil
	}
	host, _ := os.Hostname()
	id := host + "_" + string(uuid.NewUUID())
	return id, writeFileAtomic(path, []byte(id+"\n"), 0o600)
}
