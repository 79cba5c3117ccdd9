package agentcmd

import (
	"runtime/debug"
	"strings"
	"testing"
)

// TestKubernetesVersion: the Kubernetes version comes from the modules built in — k8s.io/kubernetes when the
// control plane is linked, client-go's release otherwise — and a replaced module reports its replacement.
// (Test binaries carry no module list, so this is where the reading is tested.)
func TestKubernetesVersion(t *testing.T) {
	mod := func(path, version string) *debug.Module { return &debug.Module{Path: path, Version: version} }
	tests := []struct {
		name string
		deps []*debug.Module
		want string
	}{
		{name: "flotilla", deps: []*debug.Module{mod("k8s.io/client-go", "v0.37.2"), mod("k8s.io/kubernetes", "v1.37.2")}, want: "v1.37.2"},
		{name: "agent", deps: []*debug.Module{mod("k8s.io/client-go", "v0.37.2")}, want: "v1.37.2"},
		{name: "replaced", deps: []*debug.Module{{Path: "k8s.io/client-go", Version: "v0.0.0", Replace: mod("k8s.io/client-go", "v0.36.1")}}, want: "v1.36.1"},
		{name: "none", want: "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := kubernetesVersion(&debug.BuildInfo{Deps: tt.deps}); got != tt.want {
				t.Fatalf("kubernetesVersion = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestAgentVersionFlag: flotilla-agent --version prints the version line, as flotilla's does.
func TestAgentVersionFlag(t *testing.T) {
	root := NewRoot()
	var out strings.Builder
	root.SetOut(&out)
	root.SetArgs([]string{"--version"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if want := "flotilla-agent " + Version + " (kubernetes "; !strings.HasPrefix(out.String(), want) {
		t.Fatalf("flotilla-agent --version printed %q, want a line starting %q", out.String(), want)
	}
}
