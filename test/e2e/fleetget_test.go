package e2e

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flotilla-io/flotilla/internal/testenv"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// TestFleetGetWithOneMemberFrozen: `flotilla get KIND --clusters all` reads every member through the hub (m1
// and m2 over their tunnels, m3 directly), with a CLUSTER column; with m2 frozen, the others' rows still come,
// and m2 gets an error line within the per-cluster timeout.
func TestFleetGetWithOneMemberFrozen(t *testing.T) {
	f := useFleet(t)
	get := func() string {
		p := testenv.StartBinary(t, framework.Binary(t), "flotilla-get", "get", "namespaces", "kube-system", "--clusters", "all",
			"--cluster-timeout", "5s", "--kubeconfig", f.hub.Kubeconfig)
		if err := p.Wait(time.Minute); err != nil {
			t.Fatalf("flotilla get namespaces: %v\n%s", err, p.Output())
		}
		return p.Output()
	}
	row := func(cluster string) *regexp.Regexp {
		return regexp.MustCompile(`(?m)^` + cluster + `\s+kube-system\s+Active\s`)
	}

	testenv.Eventually(t, 30*time.Second, "every member's kube-system through the hub", func() error {
		out := get()
		for _, c := range []string{"m1", "m2", "m3"} {
			if !row(c).MatchString(out) {
				return &missingRow{c, out}
			}
		}
		if !strings.HasPrefix(out, "CLUSTER") {
			return &missingRow{"CLUSTER header", out}
		}
		return nil
	})

	f.m2.Freeze()
	defer f.m2.Resume()
	out := get()
	for _, c := range []string{"m1", "m3"} {
		if !row(c).MatchString(out) {
			t.Fatalf("with m2 frozen, no row of %s:\n%s", c, out)
		}
	}
	if row("m2").MatchString(out) || !strings.Contains(out, "error: cluster m2: ") {
		t.Fatalf("with m2 frozen, want an error line for m2 and no row:\n%s", out)
	}
}

type missingRow struct{ what, out string }

func (e *missingRow) Error() string { return "no " + e.what + " in:\n" + e.out }
