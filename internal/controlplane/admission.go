package controlplane

import (
	"fmt"
	"path/filepath"
)

// Events are rate-limited per namespace by kube-apiserver's EventRateLimit admission plugin. An agent may
// write events only in its cluster's namespace, so this bounds what one agent (or one busy namespace) can
// put into etcd; beyond it the API server answers 429 and event recorders drop the event, which nothing
// depends on.
const (
	eventQPS   = 20
	eventBurst = 500
)

// admissionConfig is the path of kube-apiserver's admission configuration in dataDir.
func admissionConfig(dataDir string) string { return filepath.Join(dataDir, "admission.yaml") }

// writeAdmissionConfig writes the configuration of the admission plugins that need one.
func writeAdmissionConfig(dataDir string) error {
	data := fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: EventRateLimit
  configuration:
    apiVersion: eventratelimit.admission.k8s.io/v1alpha1
    kind: Configuration
    limits:
    - type: Namespace
      qps: %d
      burst: %d
      cacheSize: 4096
`, eventQPS, eventBurst)
	return writeFileAtomic(admissionConfig(dataDir), []byte(data), 0o600)
}
