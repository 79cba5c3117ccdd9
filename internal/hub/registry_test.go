package hub

import (
	"slices"
	"strings"
	"testing"
)

func TestRegistrySelect(t *testing.T) {
	r := Registry{{Name: "detector"}, {Name: "scheduler"}, {Name: "binding"}}
	tests := []struct {
		spec    []string
		want    []string
		wantErr string
	}{
		{spec: []string{"*"}, want: []string{"detector", "scheduler", "binding"}},
		{spec: []string{"*", "-scheduler"}, want: []string{"detector", "binding"}},
		{spec: []string{"binding", "detector"}, want: []string{"detector", "binding"}},
		{spec: nil, want: nil},
		{spec: []string{"*", "nope"}, wantErr: `unknown controller "nope"`},
		{spec: []string{"-nope"}, wantErr: `unknown controller "nope"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.spec, ","), func(t *testing.T) {
			got, err := r.Select(tt.spec)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Select(%v) error = %v, want %q", tt.spec, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Names(), tt.want) {
				t.Fatalf("Select(%v) = %v, want %v", tt.spec, got.Names(), tt.want)
			}
		})
	}
}
