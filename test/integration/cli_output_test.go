package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/cli/planecmd"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// TestGetOutputFormats: flotilla get clusters and get bindings print as kubectl get does with -o name,
// -o jsonpath=, -o custom-columns=, --no-headers, --show-labels and managedFields left out of -o yaml unless
// --show-managed-fields, against the hub's real objects; Flotilla's other kinds are read on the hub by their
// CRDs' short names, and other kinds only in the members with --clusters.
func TestGetOutputFormats(t *testing.T) {
	ctx := context.Background()
	const ns = "cli-output"
	createNamespace(t, ns)
	placeableCluster(t, "cli-output-a", map[string]string{"tier": "gold"})
	create(t, configMap(ns, "web", nil))
	create(t, tolerantPolicy(ns, "web", []string{"cli-output-a"}))
	b := waitPlaced(t, ns, "web", "cli-output-a")

	run := func(args ...string) string {
		t.Helper()
		out, err := runFlotilla(ctx, args...)
		if err != nil {
			t.Fatalf("flotilla %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	lines := func(args ...string) []string {
		t.Helper()
		return strings.Split(strings.TrimSpace(run(args...)), "\n")
	}
	if got := lines("get", "clusters", "cli-output-a", "-o", "name"); strings.Join(got, "\n") != "cluster.cluster.flotilla.io/cli-output-a" {
		t.Errorf("get clusters cli-output-a -o name: %q", got)
	}
	if got := lines("get", "clusters", "-o", "name"); len(got) < 1 || !strings.HasPrefix(got[0], "cluster.cluster.flotilla.io/") {
		t.Errorf("get clusters -o name: %q", got)
	}
	if got := lines("get", "clusters", "cli-output-a", "-o", "jsonpath={.items[*].metadata.name}"); strings.Join(got, "\n") != "cli-output-a" {
		t.Errorf("get clusters -o jsonpath: %q", got)
	}
	got := lines("get", "clusters", "cli-output-a", "--no-headers")
	if len(got) != 1 || strings.Fields(got[0])[0] != "cli-output-a" {
		t.Errorf("get clusters --no-headers: %q", got)
	}
	if got := lines("get", "bindings", "-n", ns, "-o", "name"); strings.Join(got, "\n") != "resourcebinding.work.flotilla.io/"+b.Name {
		t.Errorf("get bindings -n %s -o name: %q", ns, got)
	}
	if out, err := runFlotilla(ctx, "get", "clusters", "cli-output-a", "cli-output-nosuch"); err == nil || !strings.Contains(err.Error(), `cluster "cli-output-nosuch" not found`) {
		t.Errorf("get clusters with a name that is not there: %v\n%s", err, out)
	}
	if got := lines("get", "clusters", "cli-output-a", "-l", "tier=silver"); len(got) != 1 || got[0] != "No resources found" {
		t.Errorf("get clusters NAME with a selector that leaves it out: %q", got)
	}
	if out, err := runFlotilla(ctx, "get", "clusters", "-o", "custom"); err == nil || !strings.Contains(err.Error(), `--output "custom": want wide, name`) {
		t.Errorf("get clusters -o custom: %v\n%s", err, out)
	}

	t.Run("custom columns", func(t *testing.T) {
		got := lines("get", "clusters", "cli-output-a", "-o", "custom-columns=NAME:.metadata.name,TIER:.metadata.labels.tier,NODES:.status.nodeSummary.totalNum")
		if strings.Join(collapse(got), "\n") != "NAME TIER NODES\ncli-output-a gold 3" {
			t.Errorf("get clusters -o custom-columns: %q", got)
		}
		file := filepath.Join(t.TempDir(), "columns")
		if err := os.WriteFile(file, []byte("BINDING CLUSTER\n.metadata.name .spec.clusters[*].name\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		got = lines("get", "rb", "-n", ns, "-o", "custom-columns-file="+file, "--no-headers")
		if strings.Join(collapse(got), "\n") != b.Name+" cli-output-a" {
			t.Errorf("get rb -o custom-columns-file --no-headers: %q", got)
		}
	})
	t.Run("show labels", func(t *testing.T) {
		got := lines("get", "clusters", "cli-output-a", "--show-labels")
		if len(got) != 2 || !strings.HasSuffix(got[0], "LABELS") || !strings.HasSuffix(got[1], "tier=gold") {
			t.Errorf("get clusters --show-labels: %q", got)
		}
		got = lines("get", "bindings", "-n", ns, "--show-labels", "--no-headers")
		if len(got) != 1 || !strings.HasSuffix(got[0], " "+labels.FormatLabels(b.Labels)) {
			t.Errorf("get bindings --show-labels: %q, want the labels %v last", got, b.Labels)
		}
	})
	t.Run("managed fields", func(t *testing.T) {
		if out := run("get", "clusters", "cli-output-a", "-o", "yaml"); strings.Contains(out, "managedFields") || !strings.Contains(out, "name: cli-output-a") {
			t.Errorf("get clusters -o yaml printed managedFields (or not the cluster):\n%s", out)
		}
		if out := run("get", "clusters", "cli-output-a", "-o", "yaml", "--show-managed-fields"); !strings.Contains(out, "managedFields:") {
			t.Errorf("get clusters -o yaml --show-managed-fields printed none:\n%s", out)
		}
		if out := run("get", "rb", b.Name, "-n", ns, "-o", "json"); strings.Contains(out, "managedFields") {
			t.Errorf("get rb -o json printed managedFields:\n%s", out)
		}
	})
	t.Run("Flotilla's kinds on the hub by short name", func(t *testing.T) {
		if got := lines("get", "pp", "-n", ns, "-o", "name"); strings.Join(got, "\n") != "propagationpolicy.policy.flotilla.io/web" {
			t.Errorf("get pp -n %s -o name: %q", ns, got)
		}
		if got := collapse(lines("get", "propagationpolicies", "-A", "--no-headers")); !containsPrefix(got, ns+" web ") {
			t.Errorf("get propagationpolicies -A: want a row with the namespace first, got %q", got)
		}
		if got := lines("get", "fc", "cli-output-a", "--no-headers"); len(got) != 1 || strings.Fields(got[0])[0] != "cli-output-a" {
			t.Errorf("get fc cli-output-a: %q", got)
		}
		testenv.Eventually(t, hangGuard, "get works lists the cluster's Work", func() error {
			out, err := runFlotilla(ctx, "get", "works", "-n", clusterv1alpha1.ClusterNamespace("cli-output-a"), "-o", "name")
			if err != nil || !strings.HasPrefix(out, "work.work.flotilla.io/") {
				return fmt.Errorf("%v: %q", err, out)
			}
			return nil
		})
		if out, err := runFlotilla(ctx, "get", "pods", "-A"); err == nil || !strings.Contains(err.Error(), "pods is not a Flotilla kind") || !strings.Contains(err.Error(), "--clusters") {
			t.Errorf("get pods without --clusters: %v\n%s", err, out)
		}
		if out, err := runFlotilla(ctx, "get", "nosuchkinds"); err == nil || !strings.Contains(err.Error(), `the hub serves no kind "nosuchkinds"`) {
			t.Errorf("get nosuchkinds: %v\n%s", err, out)
		}
	})
}

// TestGetWatch: get clusters -w and get bindings -w print the table, then a row for each change (a label on
// the cluster, a new binding) without a second header, and stop without an error when cancelled.
func TestGetWatch(t *testing.T) {
	const ns = "cli-watch"
	createNamespace(t, ns)
	placeableCluster(t, "cli-watch-a", nil)

	clusters := startWatch(t, "get", "clusters", "cli-watch-a", "-w", "--show-labels")
	clusters.waitFor(t, "cli-watch-a", 1)
	patchClusterLabels(t, "cli-watch-a", map[string]string{"watched": "yes"})
	row := clusters.waitFor(t, "watched=yes", 1)
	if !strings.HasPrefix(row, "cli-watch-a ") {
		t.Errorf("the change's row: %q", row)
	}
	if out := clusters.stop(t); strings.Count(out, "NAME") != 1 {
		t.Errorf("get clusters -w printed the header other than once:\n%s", out)
	}

	bindings := startWatch(t, "get", "bindings", "-n", ns, "-w")
	create(t, configMap(ns, "web", nil))
	create(t, tolerantPolicy(ns, "web", []string{"cli-watch-a"}))
	row = bindings.waitFor(t, "cli-watch-a(", 1)
	if !strings.HasPrefix(row, ns+" web-configmap ") {
		t.Errorf("the new binding's row: %q", row)
	}
	if out := bindings.stop(t); strings.Count(out, "NAMESPACE") != 1 {
		t.Errorf("get bindings -w on an empty namespace, then a binding: want one header, got\n%s", out)
	}
}

// watchRun is a flotilla command running in this process until stopped.
type watchRun struct {
	mu     sync.Mutex
	out    bytes.Buffer
	cancel context.CancelFunc
	done   chan error
}

func (w *watchRun) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.out.Write(p)
}

func (w *watchRun) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.out.String()
}

func startWatch(t *testing.T, args ...string) *watchRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &watchRun{cancel: cancel, done: make(chan error, 1)}
	root := planecmd.NewRoot()
	root.SetOut(w)
	root.SetErr(w)
	root.SetArgs(append(args, "--kubeconfig", env.Kubeconfig))
	go func() { w.done <- root.ExecuteContext(ctx) }()
	t.Cleanup(cancel)
	return w
}

// waitFor waits for the n-th line that contains s and returns it with its runs of spaces made one.
func (w *watchRun) waitFor(t *testing.T, s string, n int) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		var found []string
		for _, l := range collapse(strings.Split(w.String(), "\n")) {
			if strings.Contains(l, s) {
				found = append(found, l)
			}
		}
		if len(found) >= n {
			return found[n-1]
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no line with %q within a minute:\n%s", s, w.String())
	return ""
}

// stop cancels the command and returns what it printed; it must end without an error.
func (w *watchRun) stop(t *testing.T) string {
	t.Helper()
	w.cancel()
	select {
	case err := <-w.done:
		if err != nil {
			t.Fatalf("the watch ended with %v:\n%s", err, w.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the watch did not end when cancelled:\n%s", w.String())
	}
	return w.String()
}

func patchClusterLabels(t *testing.T, name string, labels map[string]string) {
	t.Helper()
	c := &clusterv1alpha1.Cluster{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, c); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(c.DeepCopy())
	c.Labels = labels
	if err := env.Client.Patch(context.Background(), c, patch); err != nil {
		t.Fatal(err)
	}
}

// collapse makes every run of spaces in each line one, so a test does not depend on column widths.
func collapse(lines []string) []string {
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		out = append(out, strings.Join(strings.Fields(l), " "))
	}
	return out
}

func containsPrefix(lines []string, prefix string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}
