package agentcmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flotilla-io/flotilla/internal/agent"
)

func TestJoinValidate(t *testing.T) {
	const hash = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
	tests := []struct {
		name    string
		o       joinOptions
		args    []string
		wantErr string
	}{
		{"pull ok", joinOptions{mode: "pull", token: "abcdef.0123456789abcdef", caCertHashes: []string{hash}, clusterName: "m1"}, []string{"https://hub:6443"}, ""},
		{"pull without hub URL", joinOptions{mode: "pull", token: "abcdef.0123456789abcdef", caCertHashes: []string{hash}, clusterName: "m1"}, nil, "needs the hub URL"},
		{"plain http hub", joinOptions{mode: "pull", token: "abcdef.0123456789abcdef", caCertHashes: []string{hash}, clusterName: "m1"}, []string{"http://hub"}, "want https://HOST:PORT"},
		{"malformed token", joinOptions{mode: "pull", token: "abc", caCertHashes: []string{hash}, clusterName: "m1"}, []string{"https://hub"}, "want a bootstrap token"},
		{"malformed hash", joinOptions{mode: "pull", token: "abcdef.0123456789abcdef", caCertHashes: []string{"abc"}, clusterName: "m1"}, []string{"https://hub"}, "--ca-cert-hash"},
		{"invalid name", joinOptions{mode: "pull", token: "abcdef.0123456789abcdef", caCertHashes: []string{hash}, clusterName: "M_1"}, []string{"https://hub"}, `--cluster-name: cluster name "M_1" is invalid`},
		{"name too long for its namespace", joinOptions{mode: "pull", token: "abcdef.0123456789abcdef", caCertHashes: []string{hash}, clusterName: strings.Repeat("a", 47)},
			[]string{"https://hub"}, "a cluster name is at most 46 characters"},
		{"name of 46 characters", joinOptions{mode: "pull", token: "abcdef.0123456789abcdef", caCertHashes: []string{hash}, clusterName: strings.Repeat("a", 46)},
			[]string{"https://hub"}, ""},
		{"token from a file", joinOptions{mode: "pull", tokenFile: "FILE", caCertHashes: []string{hash}, clusterName: "m1"}, []string{"https://hub"}, ""},
		{"token from the environment", joinOptions{mode: "pull", caCertHashes: []string{hash}, clusterName: "m1"}, []string{"https://hub"}, ""},
		{"token twice", joinOptions{mode: "pull", token: "abcdef.0123456789abcdef", tokenFile: "FILE", caCertHashes: []string{hash}, clusterName: "m1"},
			[]string{"https://hub"}, "give the token one way"},
		{"no token", joinOptions{mode: "pull", caCertHashes: []string{hash}, clusterName: "m1"}, []string{"https://hub"}, "want a bootstrap token"},
		// The chart's agent once it has joined: its token's Secret is deleted.
		{"no token, its Secret spent", joinOptions{mode: "pull", tokenSecret: "agent-bootstrap", caCertHashes: []string{hash}, clusterName: "m1"}, []string{"https://hub"}, ""},
		{"missing hash", joinOptions{mode: "pull", token: "abcdef.0123456789abcdef", clusterName: "m1"}, []string{"https://hub"}, "--ca-cert-hash is required"},
		{"missing name", joinOptions{mode: "push"}, nil, "--cluster-name is required"},
		{"bad labels", joinOptions{mode: "push", clusterName: "m1", labels: "a=b=c"}, nil, "--labels"},
		{"push with a token", joinOptions{mode: "push", clusterName: "m1", token: "abcdef.0123456789abcdef"}, nil, "push mode takes no hub URL"},
		{"push without member kubeconfig", joinOptions{mode: "push", clusterName: "m1"}, nil, "push mode needs --cluster-kubeconfig"},
		{"unknown mode", joinOptions{mode: "both", clusterName: "m1"}, nil, `--mode "both"`},
		{"metrics address without a port", joinOptions{mode: "pull", token: "abcdef.0123456789abcdef", caCertHashes: []string{hash}, clusterName: "m1",
			agent: agent.Options{MetricsBindAddress: "localhost"}}, []string{"https://hub"}, "--metrics-bind-address"},
		{"metrics address", joinOptions{mode: "pull", token: "abcdef.0123456789abcdef", caCertHashes: []string{hash}, clusterName: "m1",
			agent: agent.Options{MetricsBindAddress: "127.0.0.1:8080"}}, []string{"https://hub"}, ""},
		{"probe address without a port", joinOptions{mode: "pull", token: "abcdef.0123456789abcdef", caCertHashes: []string{hash}, clusterName: "m1",
			agent: agent.Options{HealthProbeBindAddress: "8081"}}, []string{"https://hub"}, "--health-probe-bind-address"},
		{"probe address", joinOptions{mode: "pull", token: "abcdef.0123456789abcdef", caCertHashes: []string{hash}, clusterName: "m1",
			agent: agent.Options{HealthProbeBindAddress: ":8081"}}, []string{"https://hub"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.o
			if o.tokenFile == "FILE" {
				o.tokenFile = filepath.Join(t.TempDir(), "token")
				if err := os.WriteFile(o.tokenFile, []byte("abcdef.0123456789abcdef\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if tt.name == "token from the environment" {
				t.Setenv(tokenEnv, "abcdef.0123456789abcdef")
			}
			o.agent.CertTTL = 24 * time.Hour
			o.agent.DataDir = t.TempDir()
			err := o.validate(tt.args)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want %q", err, tt.wantErr)
			}
		})
	}
}
