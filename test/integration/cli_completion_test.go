package integration

import (
	"context"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

// TestShellCompletion: cobra's __complete (what the scripts of flotilla completion bash|zsh|fish call)
// completes cluster names, kinds (and KIND/NAME), namespaces and contexts from the hub and the kubeconfig the command line
// names so far; the bash script itself is printed.
func TestShellCompletion(t *testing.T) {
	ctx := context.Background()
	placeableCluster(t, "complete-a", nil)
	placeableCluster(t, "complete-b", nil)
	createNamespace(t, "complete-ns")
	create(t, configMap("complete-ns", "settings", nil))
	cfg, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	member := kubeconfigWithContexts(t)
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"unjoin", "--kubeconfig", env.Kubeconfig, ""}, []string{"complete-a\n", "complete-b\n"}},
		{[]string{"taint", "--kubeconfig", env.Kubeconfig, "cluster", ""}, []string{"complete-a\n", "complete-b\n"}},
		{[]string{"get", "--kubeconfig", env.Kubeconfig, "clusters", ""}, []string{"complete-a\n"}},
		{[]string{"explain", "--kubeconfig", env.Kubeconfig, "--cluster", ""}, []string{"complete-b\n"}},
		{[]string{"get", "--kubeconfig", env.Kubeconfig, ""}, []string{"clusters\n", "deployments\n", "propagationpolicies\n"}},
		{[]string{"rollout", "status", "--kubeconfig", env.Kubeconfig, ""}, []string{"deployments/\n"}},
		{[]string{"status", "--kubeconfig", env.Kubeconfig, "-n", ""}, []string{"complete-ns\n", "default\n"}},
		{[]string{"explain", "--kubeconfig", env.Kubeconfig, "-n", "complete-ns", "configmap/"}, []string{"configmap/settings\n"}},
		{[]string{"get", "--kubeconfig", env.Kubeconfig, "--context", ""}, []string{cfg.CurrentContext + "\n"}},
		{[]string{"join", "--cluster-kubeconfig", member, "--cluster-context", ""}, []string{"member\n", "nowhere\n"}},
	} {
		out, err := runCLI(ctx, append([]string{"__complete"}, tt.args...)...)
		for _, want := range tt.want {
			if err != nil || !strings.Contains(out, want) {
				t.Errorf("__complete %s: %v, want %q in\n%s", strings.Join(tt.args, " "), err, want, out)
			}
		}
	}
	if out, err := runCLI(ctx, "completion", "bash"); err != nil || !strings.Contains(out, "bash completion") {
		t.Errorf("completion bash: %v\n%.200s", err, out)
	}
}
