package cli

import (
	"strings"
	"testing"
)

// flotilla rebalance refuses a bad argument or flag before it reaches the hub (the kubeconfig does not exist).
func TestRebalanceRefusesBadArguments(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"web"}, `"web": want KIND/NAME`},
		{[]string{"deployment/"}, `"deployment/": want KIND/NAME`},
		{[]string{"/web"}, `"/web": want KIND/NAME`},
		{[]string{"deployment/web/x"}, `"deployment/web/x": want KIND/NAME`},
		{[]string{"deployment/web", "deployment/.."}, `name ".."`},
		{[]string{"deployment/web", "-o", "table"}, `--output "table": want yaml or json`},
		{[]string{"deployment/web", "-n", "Shop"}, `--namespace "Shop"`},
		{[]string{"deployment/web", "--ttl", "-1"}, "--ttl -1"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			root := NewPluginRoot()
			root.SetArgs(append([]string{"rebalance", "--kubeconfig", t.TempDir() + "/none"}, tt.args...))
			if err := root.Execute(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestParseKindName(t *testing.T) {
	for arg, want := range map[string]kindName{
		"deployment/web":              {kind: "deployment", name: "web"},
		"deployments.apps/web":        {kind: "deployments.apps", name: "web"},
		"clusterrole/system:operator": {kind: "clusterrole", name: "system:operator"},
	} {
		if got, err := parseKindName(arg); err != nil || got != want {
			t.Errorf("parseKindName(%q) = %+v, %v; want %+v", arg, got, err, want)
		}
	}
}
