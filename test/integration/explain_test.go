package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
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

	// A pass that finds the same verdicts writes nothing: a label change on a cluster wakes the scheduler for
	// every binding, and the reasons, which name no time and come in a fixed order, stay as they were.
	before := settledBinding(t, ns, "web")
	since := reconciles(t, "scheduler", "cluster-scheduler")
	bindings := &workv1alpha1.ResourceBindingList{}
	if err := env.Client.List(ctx, bindings); err != nil {
		t.Fatal(err)
	}
	labelCluster(t, "explain-c", map[string]string{"explain": "woken"})
	testenv.Eventually(t, hangGuard, "the scheduler woken for every binding", func() error {
		if woken := reconciles(t, "scheduler", "cluster-scheduler") - since; woken < float64(len(bindings.Items)) {
			return fmt.Errorf("%v reconciles of %d bindings", woken, len(bindings.Items))
		}
		return nil
	})
	if after, err := binding(ctx, configMapKind, ns, "web"); err != nil || after.ResourceVersion != before.ResourceVersion {
		t.Fatalf("the same verdicts were written again (%v): %+v", err, after.Status.NotPlacedOn)
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
