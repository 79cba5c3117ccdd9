package planecmd

import (
	"slices"
	"testing"

	"github.com/spf13/cobra"

	"github.com/flotilla-io/flotilla/internal/cli"
)

// TestPluginHasEveryUserVerb: kubectl-flotilla has every verb of flotilla but those that run a hub, a fleet
// or an agent, so a verb added to flotilla alone is noticed here.
func TestPluginHasEveryUserVerb(t *testing.T) {
	notInPlugin := []string{"agent", "bench", "dev", "hub", "join", "unjoin", "up"}
	var want []string
	for _, c := range NewRoot().Commands() {
		if !slices.Contains(notInPlugin, c.Name()) {
			want = append(want, c.Name())
		}
	}
	got := names(cli.NewPluginRoot().Commands())
	if !slices.Equal(got, want) {
		t.Fatalf("kubectl-flotilla has %v, want %v", got, want)
	}
	for _, verb := range []string{"get", "describe", "status", "explain", "token", "accept", "deny", "taint", "clusterset", "rollout", "rebalance", "kubeconfig", "dashboard"} {
		if !slices.Contains(got, verb) {
			t.Errorf("kubectl-flotilla has no %s", verb)
		}
	}
}

func names(cmds []*cobra.Command) []string {
	var out []string
	for _, c := range cmds {
		out = append(out, c.Name())
	}
	return out
}
