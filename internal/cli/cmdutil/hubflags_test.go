package cmdutil

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// TestHubFlags: the namespace is -n, else the kubeconfig context's (the --context one when given), else
// default; --as, --as-group, --as-uid and --request-timeout reach the client configuration as kubectl's do.
func TestHubFlags(t *testing.T) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["hub"] = &clientcmdapi.Cluster{Server: "https://hub.example.com:6443"}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: "secret"}
	cfg.Contexts["shop"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "admin", Namespace: "shop"}
	cfg.Contexts["plain"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "admin"}
	cfg.CurrentContext = "shop"
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	parse := func(t *testing.T, args ...string) *HubFlags {
		t.Helper()
		f := &HubFlags{}
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		f.AddFlags(fs)
		f.AddNamespaceFlag(fs, "namespace of the template")
		if err := fs.Parse(append([]string{"--kubeconfig", kubeconfig}, args...)); err != nil {
			t.Fatal(err)
		}
		return f
	}
	for _, tt := range []struct {
		args          []string
		want, wantErr string
	}{
		{want: "shop"},
		{args: []string{"-n", "web"}, want: "web"},
		{args: []string{"--context", "plain"}, want: "default"},
		{args: []string{"--context", "plain", "--namespace", "web"}, want: "web"},
		{args: []string{"-n", "Web_1"}, wantErr: `--namespace "Web_1"`},
		{args: []string{"--context", "nowhere"}, wantErr: "nowhere"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			ns, err := parse(t, tt.args...).Namespace()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || ns != tt.want {
				t.Fatalf("namespace = %q, %v; want %q", ns, err, tt.want)
			}
		})
	}

	rest, err := parse(t, "--as", "jane", "--as-group", "dev", "--as-group", "ops", "--as-uid", "42", "--request-timeout", "7s").RestConfig()
	if err != nil {
		t.Fatal(err)
	}
	if rest.Impersonate.UserName != "jane" || !slices.Equal(rest.Impersonate.Groups, []string{"dev", "ops"}) || rest.Impersonate.UID != "42" ||
		rest.Timeout != 7*time.Second {
		t.Fatalf("impersonation %+v, timeout %s", rest.Impersonate, rest.Timeout)
	}
	if _, err := parse(t, "--request-timeout", "soon").RestConfig(); err == nil || !strings.Contains(err.Error(), `--request-timeout "soon"`) {
		t.Fatalf("--request-timeout soon: %v", err)
	}
}
