package integration

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/flotilla-io/flotilla/internal/testenv"
)

// TestExplainSaysWhyNotHere: the scheduler records why it left each cluster out, and flotilla explain prints,
// per cluster, the placement or those reasons; --cluster narrows it to one.
func TestExplainSaysWhyNotHere(t *testing.T) {
	ctx := context.Background()
	const ns = "explain"
	createNamespace(t, ns)
	for _, name := range []string{"explain-a", "explain-b", "explain-c"} {
		placeableCluster(t, name, nil)
	}
	if out, err := runFlotilla(ctx, "taint", "cluster", "explain-b", "gpu=yes:NoSchedule"); err != nil {
		t.Fatalf("flotilla taint: %v\n%s", err, out)
	}
	create(t, configMap(ns, "web", nil))
	create(t, tolerantPolicy(ns, "web", []string{"explain-a", "explain-b"}))
	waitPlaced(t, ns, "web", "explain-a")

	row := func(out, cluster string) string {
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, cluster+" ") {
				return strings.Join(strings.Fields(line), " ")
			}
		}
		return ""
	}
	var out string
	testenv.Eventually(t, hangGuard, "flotilla explain gives the reasons", func() error {
		var err error
		if out, err = runFlotilla(ctx, "explain", "configmap/web", "-n", ns); err != nil {
			return err
		}
		if !strings.Contains(row(out, "explain-b"), "TaintToleration: have the untolerated taint gpu:NoSchedule") ||
			!strings.Contains(row(out, "explain-c"), "ClusterAffinity: do not match the cluster affinity") {
			return errors.New("no reasons yet:\n" + out)
		}
		return nil
	})
	if got := row(out, "explain-a"); !strings.HasPrefix(got, "explain-a yes 0") {
		t.Fatalf("explain-a: %q, want placed:\n%s", got, out)
	}
	if strings.Contains(row(out, "explain-b"), "ClusterAffinity") {
		t.Fatalf("explain-b is in the affinity, yet explain says it is not:\n%s", out)
	}

	one, err := runFlotilla(ctx, "explain", "configmap/web", "-n", ns, "--cluster", "explain-b")
	if err != nil || row(one, "explain-a") != "" || row(one, "explain-b") == "" {
		t.Fatalf("--cluster explain-b: %v\n%s", err, one)
	}
	if out, err := runFlotilla(ctx, "explain", "configmap/web", "-n", ns, "--cluster", "nowhere"); err == nil ||
		!strings.Contains(err.Error(), "--cluster nowhere: no such cluster") {
		t.Fatalf("--cluster nowhere: %v\n%s", err, out)
	}
}
