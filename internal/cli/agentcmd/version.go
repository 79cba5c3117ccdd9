package agentcmd

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/component-base/version"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-io/flotilla/internal/metrics"
)

// Version is Flotilla's version, set at build time with -ldflags "-X .../internal/cli/agentcmd.Version=v0.1.0".
var Version = "v0.0.0-dev"

// GitCommit and GitTreeState are the commit the binary was built from and whether the tree had changes
// (clean or dirty), set by the Makefile's -ldflags like Version. Without them the commit Go records in the
// build (-buildvcs) is used, when there is one.
var GitCommit, GitTreeState string

// VersionInfo is what `flotilla version -o json|yaml` prints.
type VersionInfo struct {
	// Flotilla is the version the binary was built as (the Makefile's VERSION, git describe).
	Flotilla string `json:"flotilla"`
	// Kubernetes is the version of the Kubernetes libraries built in: k8s.io/kubernetes in flotilla, whose
	// control plane embeds it; the release client-go belongs to in flotilla-agent, which links no control plane.
	Kubernetes string `json:"kubernetes"`
	// GoVersion is the Go toolchain that built the binary.
	GoVersion string `json:"goVersion"`
	// GitCommit and GitTreeState (clean or dirty) are the source the binary was built from; empty when it
	// was built outside a git checkout.
	GitCommit    string `json:"gitCommit,omitempty"`
	GitTreeState string `json:"gitTreeState,omitempty"`
	// Platform is GOOS/GOARCH.
	Platform string `json:"platform"`
}

// GetVersion reads the version of this binary from its link-time variables and its embedded build information.
func GetVersion() VersionInfo {
	v := VersionInfo{Flotilla: Version, Kubernetes: "unknown", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	info, ok := debug.ReadBuildInfo()
	if ok {
		v.Kubernetes = kubernetesVersion(info)
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				v.GitCommit = s.Value
			case "vcs.modified":
				v.GitTreeState = map[string]string{"true": "dirty", "false": "clean"}[s.Value]
			}
		}
	}
	if GitCommit != "" {
		v.GitCommit, v.GitTreeState = GitCommit, GitTreeState
	}
	// The Makefile sets component-base's version for the embedded components; without it (go build, go
	// install) the module versions above say the same.
	if kv := version.Get().GitVersion; strings.HasPrefix(kv, "v1.") {
		v.Kubernetes = kv
	}
	return v
}

// kubernetesVersion is the Kubernetes release of the libraries in the build: k8s.io/kubernetes when it is
// linked, otherwise the release of client-go (client-go v0.X.Y ships with Kubernetes v1.X.Y).
func kubernetesVersion(info *debug.BuildInfo) string {
	versions := map[string]string{}
	for _, d := range info.Deps {
		if d.Replace != nil {
			d = d.Replace
		}
		versions[d.Path] = d.Version
	}
	if v := versions["k8s.io/kubernetes"]; v != "" {
		return v
	}
	if v, ok := strings.CutPrefix(versions["k8s.io/client-go"], "v0."); ok {
		return "v1." + v
	}
	return "unknown"
}

// String is the one line `flotilla version` prints.
func (v VersionInfo) String() string {
	s := fmt.Sprintf("%s (kubernetes %s, %s, %s", v.Flotilla, v.Kubernetes, v.GoVersion, v.Platform)
	if v.GitCommit != "" {
		s += ", commit " + v.GitCommit
		if v.GitTreeState == "dirty" {
			s += "-dirty"
		}
	}
	return s + ")"
}

// NewVersionCommand prints the binary's version, the Kubernetes version it was built from, Go's and the commit.
func NewVersionCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print Flotilla's version, the Kubernetes version it embeds, Go's and the commit",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return PrintVersion(cmd.OutOrStdout(), cmd.Root().Name(), output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json or yaml (default: one line)")
	return cmd
}

// PrintVersion writes the version of the binary called name in output's format ("", json or yaml).
func PrintVersion(out io.Writer, name, output string) error {
	v := GetVersion()
	switch output {
	case "":
		_, err := fmt.Fprintf(out, "%s %s\n", name, v)
		return err
	case "json":
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%s\n", b)
		return err
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = out.Write(b)
		return err
	}
	return fmt.Errorf("--output %q: must be json or yaml", output)
}

// AddVersionFlag gives root the --version its help advertises: it prints what `version` prints. It also
// records the version for flotilla_build_info, which the hub and agent commands of root serve.
func AddVersionFlag(root *cobra.Command) {
	v := GetVersion()
	metrics.SetBuild(v.Flotilla, v.GitCommit)
	root.Version = Version
	root.Flags().Bool("version", false, "print the version and quit (the version command has -o json|yaml)")
	root.SetVersionTemplate(root.Name() + " " + strings.ReplaceAll(GetVersion().String(), "{{", "") + "\n")
}
