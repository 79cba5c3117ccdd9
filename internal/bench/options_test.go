package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPropagationOptionsValidate(t *testing.T) {
	notADir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notADir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	valid := func() PropagationOptions {
		return PropagationOptions{Members: 2, Objects: 20, Replicas: 1, Mode: "pull", Timeout: time.Minute,
			Waves: []string{"create", "update", "delete"}}
	}
	tests := []struct {
		name   string
		change func(o *PropagationOptions)
		want   string
	}{
		{"valid", func(*PropagationOptions) {}, ""},
		{"create only", func(o *PropagationOptions) { o.Waves = []string{"create"} }, ""},
		{"no members", func(o *PropagationOptions) { o.Members = 0 }, "--members 0"},
		{"too many members", func(o *PropagationOptions) { o.Members = 21 }, "--members 21"},
		{"no objects", func(o *PropagationOptions) { o.Objects = 0 }, "--objects 0"},
		{"no replicas", func(o *PropagationOptions) { o.Replicas = 0 }, "--replicas 0"},
		{"unknown mode", func(o *PropagationOptions) { o.Mode = "pushy" }, `--mode "pushy"`},
		{"no timeout", func(o *PropagationOptions) { o.Timeout = 0 }, "--timeout 0s"},
		{"negative rest", func(o *PropagationOptions) { o.Rest = -time.Second }, "--rest -1s: must not be negative"},
		{"update without create", func(o *PropagationOptions) { o.Waves = []string{"update"} }, "--waves update"},
		{"out of order", func(o *PropagationOptions) { o.Waves = []string{"create", "delete"} }, "--waves create,delete"},
		{"profiles into a new directory", func(o *PropagationOptions) { o.ProfileDir = filepath.Join(t.TempDir(), "profiles") }, ""},
		{"profiles into a file", func(o *PropagationOptions) { o.ProfileDir = notADir }, "--profile-dir " + notADir + ": not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := valid()
			tt.change(&o)
			err := o.Validate()
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestScaleOptionsValidate(t *testing.T) {
	valid := ScaleOptions{Clusters: 2, WorksPerCluster: 1, Objects: 2, Settle: 10 * time.Second, GracePeriod: 40 * time.Second}
	if err := valid.Validate(); err != nil {
		t.Fatal(err)
	}
	grace := 40 * time.Second
	for want, o := range map[string]ScaleOptions{
		"--clusters 0":           {Clusters: 0, Objects: 1, Settle: time.Minute, GracePeriod: grace},
		"--works-per-cluster -1": {Clusters: 1, WorksPerCluster: -1, Objects: 1, Settle: time.Minute, GracePeriod: grace},
		"--objects 0":            {Clusters: 1, Settle: time.Minute, GracePeriod: grace},
		"--settle 1s":            {Clusters: 1, Objects: 1, Settle: time.Second, GracePeriod: grace},
		"--cluster-grace-period 10s: must be at least 20s": {Clusters: 1, Objects: 1, Settle: time.Minute, GracePeriod: 10 * time.Second},
		"--settle 30s: must be at least one heartbeat (40s with --cluster-grace-period 2m40s)": {Clusters: 1, Objects: 1,
			Settle: 30 * time.Second, GracePeriod: 160 * time.Second},
		"--profile-dir /dev/null: not a directory": {Clusters: 1, Objects: 1, Settle: time.Minute, GracePeriod: grace, ProfileDir: "/dev/null"},
	} {
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want %q", err, want)
		}
	}
}

func TestDashboardOptionsValidate(t *testing.T) {
	valid := func() DashboardOptions {
		return DashboardOptions{Clusters: 2, Templates: 10, Spread: 2, Requests: 3, Updates: 2, Settle: 10 * time.Second, Baseline: true}
	}
	tests := []struct {
		name   string
		change func(o *DashboardOptions)
		want   string
	}{
		{"valid", func(*DashboardOptions) {}, ""},
		{"spread of one", func(o *DashboardOptions) { o.Spread = 1 }, ""},
		{"no clusters", func(o *DashboardOptions) { o.Clusters = 0 }, "--clusters 0: must be at least 1"},
		{"no templates", func(o *DashboardOptions) { o.Templates = 0 }, "--templates 0"},
		{"no spread", func(o *DashboardOptions) { o.Spread = 0 }, "--spread 0"},
		{"spread beyond the clusters", func(o *DashboardOptions) { o.Spread = 3 }, "--spread 3: must be between 1 and --clusters (2)"},
		{"no requests", func(o *DashboardOptions) { o.Requests = 0 }, "--requests 0"},
		{"no updates", func(o *DashboardOptions) { o.Updates = 0 }, "--updates 0"},
		{"baseline settled shorter than a heartbeat", func(o *DashboardOptions) { o.Settle = 5 * time.Second }, "--settle 5s: must be at least one heartbeat"},
		{"no baseline, short settle", func(o *DashboardOptions) { o.Baseline, o.Settle = false, 2*time.Second }, ""},
		{"negative settle", func(o *DashboardOptions) { o.Baseline, o.Settle = false, -time.Second }, "--settle -1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := valid()
			tt.change(&o)
			err := o.Validate()
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
}
