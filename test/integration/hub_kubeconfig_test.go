package integration

import (
	"context"
	"net/url"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestHubKubeconfig: flotilla hub kubeconfig prints the admin kubeconfig the running hub wrote into its data
// directory (what kubectl exec hub-0 -- flotilla hub kubeconfig reads in the chart's pod, whose image has no
// cat), and with --server one that reaches the hub at that address; a host the hub's certificate does not
// name, a URL that is not https and a directory without a hub are refused with what to do.
func TestHubKubeconfig(t *testing.T) {
	ctx := context.Background()
	hubURL, err := url.Parse(env.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	server := "https://localhost:" + hubURL.Port()
	for _, tt := range []struct{ name, server, want string }{
		{name: "as written", want: env.Config.Host},
		{name: "server", server: server, want: server},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"hub", "kubeconfig", "--data-dir", env.DataDir}
			if tt.server != "" {
				args = append(args, "--server", tt.server)
			}
			out, err := runCLI(ctx, args...)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(out))
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if cfg.Host != tt.want {
				t.Fatalf("server %s, want %s", cfg.Host, tt.want)
			}
			kube, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := kube.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{}); err != nil {
				t.Fatalf("the printed kubeconfig does not reach the hub: %v", err)
			}
		})
	}
	for _, tt := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "host not in the certificate", args: []string{"--data-dir", env.DataDir, "--server", "https://hub.example.com:" + hubURL.Port()}, wantErr: "--tls-san hub.example.com"},
		{name: "not https", args: []string{"--data-dir", env.DataDir, "--server", "http://localhost:" + hubURL.Port()}, wantErr: "--server"},
		{name: "no hub there", args: []string{"--data-dir", t.TempDir()}, wantErr: "is a hub running"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := runCLI(ctx, append([]string{"hub", "kubeconfig"}, tt.args...)...)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want %q\n%s", err, tt.wantErr, out)
			}
		})
	}
}
