package controlplane

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestReadAdminKubeconfig: the admin kubeconfig of a data directory is read back as written; --server replaces
// its address only with a host the serving certificate names, and a data directory without one says why.
func TestReadAdminKubeconfig(t *testing.T) {
	dataDir := t.TempDir()
	p := PKI{Dir: filepath.Join(dataDir, "pki")}
	if err := p.Ensure([]string{"localhost", "127.0.0.1", "hub.flotilla.svc"}); err != nil {
		t.Fatal(err)
	}
	admin, err := kubeconfigFor("flotilla", "https://127.0.0.1:6443", p, AdminUser)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeKubeconfig(AdminKubeconfigPath(dataDir), admin); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name, server, wantServer, wantErr string
	}{
		{name: "as written", wantServer: "https://127.0.0.1:6443"},
		{name: "service name", server: "https://hub.flotilla.svc:6443", wantServer: "https://hub.flotilla.svc:6443"},
		{name: "name not in the certificate", server: "https://hub.example.com:6443", wantErr: "--tls-san hub.example.com"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ReadAdminKubeconfig(dataDir, tt.server)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			cluster := cfg.Clusters[cfg.Contexts[cfg.CurrentContext].Cluster]
			if cluster.Server != tt.wantServer || len(cluster.CertificateAuthorityData) == 0 || len(cfg.AuthInfos[AdminUser].ClientKeyData) == 0 {
				t.Fatalf("server %q (want %q), CA %d bytes, key %d bytes", cluster.Server, tt.wantServer,
					len(cluster.CertificateAuthorityData), len(cfg.AuthInfos[AdminUser].ClientKeyData))
			}
		})
	}
	if _, err := ReadAdminKubeconfig(t.TempDir(), ""); err == nil || !strings.Contains(err.Error(), "is a hub running") {
		t.Fatalf("empty data directory: error %v, want one asking whether a hub runs there", err)
	}
}
