package integration

import (
	"context"
	"strings"
	"testing"
)

// TestGetOutputFormats: flotilla get clusters and get bindings print as kubectl get does with -o name,
// -o jsonpath= and --no-headers, against the hub's real objects.
func TestGetOutputFormats(t *testing.T) {
	ctx := context.Background()
	const ns = "cli-output"
	createNamespace(t, ns)
	placeableCluster(t, "cli-output-a", nil)
	create(t, configMap(ns, "web", nil))
	create(t, tolerantPolicy(ns, "web", []string{"cli-output-a"}))
	b := waitPlaced(t, ns, "web", "cli-output-a")

	lines := func(args ...string) []string {
		t.Helper()
		out, err := runFlotilla(ctx, args...)
		if err != nil {
			t.Fatalf("flotilla %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.Split(strings.TrimSpace(out), "\n")
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
	if out, err := runFlotilla(ctx, "get", "clusters", "-o", "custom"); err == nil || !strings.Contains(err.Error(), `--output "custom": want wide, name`) {
		t.Errorf("get clusters -o custom: %v\n%s", err, out)
	}
}
