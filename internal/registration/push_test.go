package registration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// TestSelfContained: a join reads the files a kubeconfig names on the joining machine and embeds them, and
// refuses a kubeconfig that runs a command.
func TestSelfContained(t *testing.T) {
	dir := t.TempDir()
	tokenFile, caFile := filepath.Join(dir, "token"), filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(tokenFile, []byte("from-a-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(caFile, []byte("ca-bytes"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["m"] = &clientcmdapi.Cluster{Server: "https://kubeconfig-server:6443", CertificateAuthority: caFile}
	cfg.AuthInfos["m"] = &clientcmdapi.AuthInfo{TokenFile: tokenFile}
	cfg.Contexts["m"] = &clientcmdapi.Context{Cluster: "m", AuthInfo: "m"}
	cfg.CurrentContext = "m"
	flat, err := selfContained(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if u, c := flat.AuthInfos["m"], flat.Clusters["m"]; u.Token != "from-a-file" || u.TokenFile != "" || string(c.CertificateAuthorityData) != "ca-bytes" || c.CertificateAuthority != "" {
		t.Fatalf("not flattened: %+v %+v", u, c)
	}
	cfg.AuthInfos["m"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{Command: "gke-gcloud-auth-plugin"}}
	if _, err := selfContained(cfg); err == nil || !strings.Contains(err.Error(), "never runs commands") {
		t.Fatalf("an exec kubeconfig was accepted at join: %v", err)
	}
}
