package agentcmd

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
	"k8s.io/component-base/version"
)

// Version is Flotilla's version, set at build time with -ldflags "-X .../internal/cli/agentcmd.Version=v0.1.0".
var Version = "v0.0.0-dev"

// NewVersionCommand prints the binary's name and version, the Kubernetes version it was built from and Go's.
func NewVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print Flotilla's version and the Kubernetes version it embeds",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			goVersion := "unknown"
			if info, ok := debug.ReadBuildInfo(); ok {
				goVersion = info.GoVersion
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s (kubernetes %s, %s)\n", cmd.Root().Name(), Version, version.Get().GitVersion, goVersion)
		},
	}
}
