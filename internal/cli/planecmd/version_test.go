package planecmd

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/flotilla-io/flotilla/internal/cli/agentcmd"
)

// run executes the flotilla command line with args and returns what it printed and its error.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := NewRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

// TestVersionFlag: --version, advertised in every help page, prints the version line rather than the help,
// and the embedded kube-apiserver's own --version (which prints nothing) is not shown.
func TestVersionFlag(t *testing.T) {
	defer setVersion("v9.8.7", "0123abcd", "clean")()
	out, err := run(t, "--version")
	if err != nil {
		t.Fatal(err)
	}
	want := "flotilla v9.8.7 (kubernetes "
	if !strings.HasPrefix(out, want) || !strings.HasSuffix(out, ", commit 0123abcd)\n") || strings.Contains(out, "Usage") {
		t.Fatalf("flotilla --version printed %q, want one line starting %q", out, want)
	}
	line, err := run(t, "version")
	if err != nil || line != out {
		t.Fatalf("flotilla version printed %q (%v), want what --version prints, %q", line, err, out)
	}
	help, err := run(t, "get", "--help")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(help, "version[=true]") {
		t.Fatalf("get --help shows the embedded apiserver's --version:\n%s", help)
	}
}

// TestVersionOutput: version -o json|yaml print every field; another format is refused by name.
func TestVersionOutput(t *testing.T) {
	defer setVersion("v9.8.7", "0123abcd", "dirty")()
	want := agentcmd.VersionInfo{Flotilla: "v9.8.7", GitCommit: "0123abcd", GitTreeState: "dirty"}
	for _, format := range []string{"json", "yaml"} {
		t.Run(format, func(t *testing.T) {
			out, err := run(t, "version", "-o", format)
			if err != nil {
				t.Fatal(err)
			}
			var got agentcmd.VersionInfo
			if format == "json" {
				err = json.Unmarshal([]byte(out), &got)
			} else {
				err = yaml.UnmarshalStrict([]byte(out), &got)
			}
			if err != nil {
				t.Fatalf("%s: %v\n%s", format, err, out)
			}
			if got.Flotilla != want.Flotilla || got.GitCommit != want.GitCommit || got.GitTreeState != want.GitTreeState ||
				got.Kubernetes == "" || !strings.HasPrefix(got.GoVersion, "go") || !strings.Contains(got.Platform, "/") {
				t.Fatalf("version -o %s = %+v", format, got)
			}
		})
	}
	if _, err := run(t, "version", "-o", "wide"); err == nil || !strings.Contains(err.Error(), `--output "wide"`) {
		t.Fatalf("version -o wide: error %v, want one naming --output", err)
	}
}

// setVersion sets the link-time version variables as the Makefile does and returns a function that restores them.
func setVersion(version, commit, state string) func() {
	v, c, s := agentcmd.Version, agentcmd.GitCommit, agentcmd.GitTreeState
	agentcmd.Version, agentcmd.GitCommit, agentcmd.GitTreeState = version, commit, state
	return func() { agentcmd.Version, agentcmd.GitCommit, agentcmd.GitTreeState = v, c, s }
}
