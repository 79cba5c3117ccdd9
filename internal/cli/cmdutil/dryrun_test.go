package cmdutil

import (
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestDryRunFlag: --dry-run takes kubectl's three values, defaults to none, and refuses anything else when
// the flags are parsed, naming the values it wants.
func TestDryRunFlag(t *testing.T) {
	for _, tt := range []struct {
		args    []string
		want    DryRun
		opts    []string
		wantErr string
	}{
		{want: DryRunNone},
		{args: []string{"--dry-run=none"}, want: DryRunNone},
		{args: []string{"--dry-run=client"}, want: DryRunClient},
		{args: []string{"--dry-run=server"}, want: DryRunServer, opts: []string{"All"}},
		{args: []string{"--dry-run=true"}, wantErr: `invalid dry-run value (true): must be "none", "server", or "client"`},
		{args: []string{"--dry-run=Server"}, wantErr: "invalid dry-run value (Server)"},
		{args: []string{"--dry-run"}, wantErr: "flag needs an argument"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var d DryRun
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			AddDryRunFlag(fs, &d, "the objects")
			err := fs.Parse(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || d != tt.want || !slices.Equal(d.Options(), tt.opts) || d.Enabled() != (tt.want != DryRunNone) {
				t.Fatalf("--dry-run = %q (options %v), %v; want %q", d, d.Options(), err, tt.want)
			}
		})
	}
}
