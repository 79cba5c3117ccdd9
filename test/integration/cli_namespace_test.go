package integration

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

// TestCommandsUseContextNamespace: status, explain, rebalance and get pp read in the namespace of the
// kubeconfig's context when -n is not given, as kubectl does; -n still wins, and --as impersonates on the hub.
func TestCommandsUseContextNamespace(t *testing.T) {
	ctx := context.Background()
	const ns = "cli-context-ns"
	createNamespace(t, ns)
	placeableCluster(t, "cli-context-a", nil)
	create(t, configMap(ns, "web", nil))
	create(t, tolerantPolicy(ns, "web", []string{"cli-context-a"}))
	waitPlaced(t, ns, "web", "cli-context-a")
	kubeconfig := kubeconfigInNamespace(t, ns)

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"status", "configmap/web"}, "ConfigMap/web in " + ns},
		{[]string{"explain", "configmap/web"}, "cli-context-a"},
		{[]string{"rebalance", "configmap/web", "-o", "yaml"}, "namespace: " + ns},
		{[]string{"get", "pp", "-o", "name"}, "propagationpolicy.policy.flotilla.io/web"},
	} {
		out, err := runFlotillaAs(ctx, kubeconfig, tt.args...)
		if err != nil || !strings.Contains(out, tt.want) {
			t.Errorf("%s without -n: %v, want %q in\n%s", strings.Join(tt.args, " "), err, tt.want, out)
		}
	}
	if out, err := runFlotillaAs(ctx, kubeconfig, "status", "configmap/web", "-n", "default"); err == nil {
		t.Errorf("status -n default found the template of %s:\n%s", ns, out)
	}
	if out, err := runFlotillaAs(ctx, kubeconfig, "status", "configmap/web", "--as", "someone", "--as-group", "nobody"); err == nil ||
		!strings.Contains(err.Error(), `"someone"`) {
		t.Errorf("status --as someone: %v, want the hub to refuse that user\n%s", err, out)
	}
}

// kubeconfigInNamespace writes a copy of the hub's admin kubeconfig whose context names namespace.
func kubeconfigInNamespace(t *testing.T, namespace string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Contexts[cfg.CurrentContext].Namespace = namespace
	path := filepath.Join(t.TempDir(), "namespaced.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
