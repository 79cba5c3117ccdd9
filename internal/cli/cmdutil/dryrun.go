package cmdutil

import (
	"fmt"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DryRun is kubectl's --dry-run: none (the default) writes, client prints what would be sent without
// sending it, server sends it for the API server to check (admission, validation, defaults) without
// persisting anything. A value other than these three is refused when the flags are parsed, before the
// command runs.
//
// kubectl's own GetDryRunStrategy (k8s.io/kubectl/pkg/cmd/util) reads the same values, but that package
// links kustomize and cli-runtime into flotilla-agent, whose join takes this flag too.
type DryRun string

const (
	DryRunNone   DryRun = "none"
	DryRunClient DryRun = "client"
	DryRunServer DryRun = "server"
)

// AddDryRunFlag adds --dry-run to fs, defaulting to none; what says what a dry run shows.
func AddDryRunFlag(fs *pflag.FlagSet, d *DryRun, what string) {
	*d = DryRunNone
	fs.Var(d, "dry-run", `must be "none", "server", or "client"; client prints `+what+` without sending anything, server has the API server check every write without persisting it`)
}

// Set parses a value of --dry-run.
func (d *DryRun) Set(s string) error {
	switch DryRun(s) {
	case DryRunNone, DryRunClient, DryRunServer:
		*d = DryRun(s)
		return nil
	}
	return fmt.Errorf(`invalid dry-run value (%s): must be "none", "server", or "client"`, s)
}

func (d *DryRun) String() string { return string(*d) }

// Type is how --help names the flag's value.
func (d *DryRun) Type() string { return "string" }

// Enabled reports whether nothing may be written: client or server.
func (d DryRun) Enabled() bool { return d == DryRunClient || d == DryRunServer }

// Options is the dryRun field of the API requests a command makes: [All] for server, none otherwise (a
// client dry run makes no write request at all).
func (d DryRun) Options() []string {
	if d == DryRunServer {
		return []string{metav1.DryRunAll}
	}
	return nil
}

// Suffix is what kubectl appends to a line saying what a dry run did: " (dry run)" or " (server dry run)".
func (d DryRun) Suffix() string {
	switch d {
	case DryRunClient:
		return " (dry run)"
	case DryRunServer:
		return " (server dry run)"
	}
	return ""
}
