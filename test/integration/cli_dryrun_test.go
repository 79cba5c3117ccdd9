package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/registration"
)

// TestDryRunChangesNothing: taint, rebalance, clusterset bind and unbind, and unjoin with --dry-run=client
// and --dry-run=server say what they would do and leave the hub as it was (no taint, unjoin mark or deletion on the
// Cluster, no Rebalancer, no ClusterSetBinding); the server still refuses what it would refuse; a value other than
// none, client or server is refused before anything runs.
func TestDryRunChangesNothing(t *testing.T) {
	ctx := context.Background()
	const ns = "cli-dryrun"
	createNamespace(t, ns)
	cluster := createPullCluster(t, "dryrun-a")
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), cluster) })
	createWork(t, clusterv1alpha1.ClusterNamespace("dryrun-a"), "cli-dryrun.web", nil, "", configMap(ns, "web", nil))
	create(t, configMap(ns, "web", nil))
	// The hub's health monitor taints the agentless cluster meanwhile: what a dry run would have written is
	// looked for instead of a resourceVersion.
	unchanged := func() error {
		c := &clusterv1alpha1.Cluster{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "dryrun-a"}, c); err != nil {
			return err
		}
		for _, taint := range c.Spec.Taints {
			if taint.Key == "dedicated" {
				return fmt.Errorf("tainted %v", c.Spec.Taints)
			}
		}
		if c.DeletionTimestamp != nil || c.Annotations[clusterv1alpha1.AnnotationUnjoin] != "" {
			return fmt.Errorf("deleted at %v, annotations %v", c.DeletionTimestamp, c.Annotations)
		}
		return nil
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"taint", "cluster", "dryrun-a", "dedicated=gpu:NoSchedule", "--dry-run=client"}, "cluster dryrun-a tainted (dry run)"},
		{[]string{"taint", "cluster", "dryrun-a", "dedicated=gpu:NoSchedule", "--dry-run=server"}, "cluster dryrun-a tainted (server dry run)"},
		{[]string{"unjoin", "dryrun-a", "--dry-run=client"}, "1 Works would be released"},
		{[]string{"unjoin", "dryrun-a", "--delete-resources", "--dry-run=server"}, "deleted; the hub takes it off (server dry run)"},
		{[]string{"rebalance", "configmap/web", "-n", ns, "--dry-run=client"}, "rebalance-(generated) (dry run)"},
		{[]string{"rebalance", "configmap/web", "-n", ns, "--dry-run=server", "-o", "yaml"}, "generateName: rebalance-"},
		{[]string{"clusterset", "bind", "global", "-n", ns, "--dry-run=client"}, "created in namespace cli-dryrun (dry run)"},
		{[]string{"clusterset", "bind", "global", "-n", ns, "--dry-run=server"}, "created in namespace cli-dryrun (server dry run)"},
	} {
		out, err := runFlotilla(ctx, tt.args...)
		if err != nil || !strings.Contains(out, tt.want) {
			t.Errorf("flotilla %s: %v, want %q in\n%s", strings.Join(tt.args, " "), err, tt.want, out)
		}
		if err := unchanged(); err != nil {
			t.Errorf("flotilla %s changed the Cluster: %v", strings.Join(tt.args, " "), err)
		}
	}
	rebalancers := &workv1alpha1.RebalancerList{}
	if err := env.Client.List(ctx, rebalancers); err != nil || len(rebalancers.Items) > 0 {
		t.Errorf("Rebalancers after dry runs: %v, %d", err, len(rebalancers.Items))
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "global"}, &clusterv1alpha1.ClusterSetBinding{}); !apierrors.IsNotFound(err) {
		t.Errorf("the ClusterSetBinding after dry runs: %v, want none", err)
	}

	for _, tt := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"taint", "cluster", "dryrun-a", "dedicated:NoSchedule", "--dry-run=yes"}, `invalid dry-run value (yes): must be "none", "server", or "client"`},
		{[]string{"taint", "cluster", "nowhere", "dedicated:NoSchedule", "--dry-run=server"}, "not found"},
		{[]string{"clusterset", "unbind", "global", "-n", ns, "--dry-run=server"}, "is not bound to namespace"},
		{[]string{"unjoin", "nowhere", "--dry-run=client"}, "not registered"},
	} {
		if out, err := runFlotilla(ctx, tt.args...); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("flotilla %s: %v, want %q\n%s", strings.Join(tt.args, " "), err, tt.wantErr, out)
		}
	}
}

// TestJoinInstallDryRun: join --install --dry-run=client prints the agent chart's objects as YAML and
// --dry-run=server has the member's API server check them, through the context --cluster-context names (the
// kubeconfig's current one reaches nothing); neither creates the namespace, the Deployment or the
// ClusterRole. The hub's own API server stands in for the member.
func TestJoinInstallDryRun(t *testing.T) {
	ctx := context.Background()
	const agentNS = "dryrun-agent"
	hashes, err := registration.CAHashes(env.Config.CAData)
	if err != nil {
		t.Fatal(err)
	}
	member := kubeconfigWithContexts(t)
	join := func(dryRun string) (string, error) {
		args := []string{"join", env.Config.Host, "--install", "--cluster-kubeconfig", member, "--cluster-context", "member",
			"--token", "abcdef.0123456789abcdef", "--cluster-name", "dryrun-j", "--install-namespace", agentNS, "--dry-run=" + dryRun}
		for _, h := range hashes {
			args = append(args, "--ca-cert-hash", h)
		}
		return runCLI(ctx, args...)
	}
	out, err := join("client")
	for _, want := range []string{"kind: Namespace", "name: " + agentNS, "kind: Deployment", "kind: ClusterRole", "kind: Secret"} {
		if err != nil || !strings.Contains(out, want) {
			t.Fatalf("join --install --dry-run=client: %v, want %q in\n%s", err, want, out)
		}
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: agentNS}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Fatalf("namespace %s after --dry-run=client: %v, want none", agentNS, err)
	}

	createNamespace(t, agentNS)
	out, err = join("server")
	for _, want := range []string{"applied Deployment " + agentNS + "/", "(server dry run)", "kind: Deployment"} {
		if err != nil || !strings.Contains(out, want) {
			t.Fatalf("join --install --dry-run=server: %v, want %q in\n%s", err, want, out)
		}
	}
	deployments := &appsv1.DeploymentList{}
	if err := env.Client.List(ctx, deployments, client.InNamespace(agentNS)); err != nil || len(deployments.Items) > 0 {
		t.Fatalf("Deployments in %s after --dry-run=server: %v, %d", agentNS, err, len(deployments.Items))
	}
	secrets := &corev1.SecretList{}
	if err := env.Client.List(ctx, secrets, client.InNamespace(agentNS)); err != nil || len(secrets.Items) > 0 {
		t.Fatalf("Secrets in %s after --dry-run=server: %v, %d", agentNS, err, len(secrets.Items))
	}

	if out, err := runCLI(ctx, "join", env.Config.Host, "--cluster-kubeconfig", member, "--cluster-context", "member", "--token", "abcdef.0123456789abcdef",
		"--ca-cert-hash", hashes[0], "--cluster-name", "dryrun-j", "--dry-run=client"); err == nil || !strings.Contains(err.Error(), "--dry-run is for --install") {
		t.Fatalf("join --dry-run without --install: %v\n%s", err, out)
	}
	if out, err := runCLI(ctx, "join", "--mode", "push", "--cluster-kubeconfig", member, "--cluster-context", "elsewhere", "--cluster-name", "dryrun-p",
		"--kubeconfig", env.Kubeconfig); err == nil || !strings.Contains(err.Error(), "elsewhere") {
		t.Fatalf("join --cluster-context elsewhere: %v\n%s", err, out)
	}
}

// kubeconfigWithContexts writes a kubeconfig whose current context reaches no API server and whose context
// "member" is the hub's admin.
func kubeconfigWithContexts(t *testing.T) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Contexts["member"] = cfg.Contexts[cfg.CurrentContext].DeepCopy()
	cfg.Clusters["nowhere"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	cfg.Contexts["nowhere"] = &clientcmdapi.Context{Cluster: "nowhere", AuthInfo: cfg.Contexts["member"].AuthInfo}
	cfg.CurrentContext = "nowhere"
	path := filepath.Join(t.TempDir(), "member.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
