package helmchart

import (
	"strings"
	"testing"

	"github.com/flotilla-io/flotilla/charts"
)

// TestHubNotes: the hub chart's notes show commands that work in its image, which has nothing but flotilla:
// flotilla hub kubeconfig with the Service's name, never cat or tar.
func TestHubNotes(t *testing.T) {
	c, err := Load(charts.Hub)
	if err != nil {
		t.Fatal(err)
	}
	notes, err := Notes(c, "hub", "flotilla", map[string]any{"service": map[string]any{"port": 7443}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"kubectl -n flotilla exec hub-0 -- flotilla hub kubeconfig --data-dir /var/lib/flotilla \\\n    --server https://hub.flotilla.svc:7443 > hub.kubeconfig",
		"--server https://localhost:7443",
		"flotilla token create --kubeconfig hub.kubeconfig --cluster-name NAME --server https://hub.flotilla.svc:7443",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("the hub chart's notes lack %q:\n%s", want, notes)
		}
	}
	for _, tool := range []string{" cat ", " tar ", "kubectl cp"} {
		if strings.Contains(notes, tool) {
			t.Errorf("the hub chart's notes use %q, which its image does not have:\n%s", tool, notes)
		}
	}
}
