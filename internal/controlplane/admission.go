package controlplane

import (
	"encoding/json"
	"path/filepath"

	"k8s.io/apiserver/pkg/admission"
)

// AdmissionPlugin is an admission plugin kube-apiserver runs besides its default ones. The control plane
// knows none of its own: the hub hands it Flotilla's checks (internal/admission).
type AdmissionPlugin struct {
	// Name enables the plugin.
	Name string
	// New builds the plugin: kube-apiserver registers it under Name and runs it after its own plugins. Nil
	// enables the kube-apiserver plugin of that name (such as EventRateLimit), in its place among them.
	New admission.Factory
	// Configuration, when set, is the plugin's configuration: a Kubernetes configuration object with its
	// apiVersion and kind, written as JSON into kube-apiserver's admission configuration file.
	Configuration any
}

// admissionConfig is the path of kube-apiserver's admission configuration in dataDir.
func admissionConfig(dataDir string) string { return filepath.Join(dataDir, "admission.yaml") }

// configured reports whether any of plugins has a configuration, and so whether kube-apiserver reads the
// admission configuration file.
func configured(plugins []AdmissionPlugin) bool {
	for _, p := range plugins {
		if p.Configuration != nil {
			return true
		}
	}
	return false
}

// writeAdmissionConfig writes the configuration of the admission plugins that have one.
func writeAdmissionConfig(dataDir string, plugins []AdmissionPlugin) error {
	type plugin struct {
		Name          string `json:"name"`
		Configuration any    `json:"configuration"`
	}
	var configs []plugin
	for _, p := range plugins {
		if p.Configuration != nil {
			configs = append(configs, plugin{Name: p.Name, Configuration: p.Configuration})
		}
	}
	// JSON is YAML: the API server reads either.
	data, err := json.Marshal(map[string]any{
		"apiVersion": "apiserver.config.k8s.io/v1",
		"kind":       "AdmissionConfiguration",
		"plugins":    configs,
	})
	if err != nil {
		return err
	}
	return writeFileAtomic(admissionConfig(dataDir), data, 0o600)
}
