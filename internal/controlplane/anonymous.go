package controlplane

import (
	"encoding/json"
	"path/filepath"
)

// authenticationConfig is where the API server's structured authentication configuration is written.
func authenticationConfig(dataDir string) string {
	return filepath.Join(dataDir, "authentication.yaml")
}

// writeAuthenticationConfig writes a configuration that authenticates anonymous requests only to paths: any
// other request without credentials is refused as unauthenticated (401) before authorization, whatever
// RBAC grants system:unauthenticated.
func writeAuthenticationConfig(dataDir string, paths []string) error {
	conditions := make([]map[string]string, 0, len(paths))
	for _, p := range paths {
		conditions = append(conditions, map[string]string{"path": p})
	}
	// JSON is YAML: the API server reads either.
	data, err := json.Marshal(map[string]any{
		"apiVersion": "apiserver.config.k8s.io/v1",
		"kind":       "AuthenticationConfiguration",
		"anonymous":  map[string]any{"enabled": true, "conditions": conditions},
	})
	if err != nil {
		return err
	}
	return writeFileAtomic(authenticationConfig(dataDir), data, 0o600)
}
