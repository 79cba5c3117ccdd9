package integration

import (
	"context"
	"net/url"
	"strings"
	"testing"
)

// TestTokenCreateServer: token create --server prints the join command with the address members reach the
// hub at instead of the kubeconfig's (a port-forward's 127.0.0.1, the hub pod's own), and warns when the
// hub's serving certificate does not name that host, since such joins fail on TLS.
func TestTokenCreateServer(t *testing.T) {
	ctx := context.Background()
	hubURL, err := url.Parse(env.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, server, warning string
	}{
		{name: "named by the certificate", server: "https://localhost:" + hubURL.Port()},
		{name: "not named by the certificate", server: "https://hub.example.com:6443", warning: "add --tls-san hub.example.com"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := runFlotilla(ctx, "token", "create", "--cluster-name", "token-server", "--server", tt.server)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if want := " flotilla join " + tt.server + " --ca-cert-hash sha256:"; !strings.Contains(out, want) || strings.Contains(out, env.Config.Host) {
				t.Fatalf("the join command does not name %s alone:\n%s", tt.server, out)
			}
			if warned := strings.Contains(out, "warning: --server"); warned != (tt.warning != "") || !strings.Contains(out, tt.warning) {
				t.Fatalf("want warning %q:\n%s", tt.warning, out)
			}
		})
	}
	if out, err := runFlotilla(ctx, "token", "create", "--cluster-name", "token-server", "--server", "hub.example.com:6443"); err == nil ||
		!strings.Contains(err.Error(), `--server "hub.example.com:6443": want https://HOST:PORT`) {
		t.Fatalf("a server without https:// is taken: %v\n%s", err, out)
	}
}
