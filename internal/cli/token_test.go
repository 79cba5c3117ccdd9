package cli

import (
	"strings"
	"testing"
	"time"
)

// TestTokenCreateDefaults: a token joins one named cluster once unless the administrator opts out by flag.
func TestTokenCreateDefaults(t *testing.T) {
	tests := []struct {
		name              string
		clusterName       string
		anyName, reusable bool
		server            string
		wantErr           string
		wantSingleUse     bool
	}{
		{name: "no name", wantErr: "--cluster-name is required"},
		{name: "bound", clusterName: "m1", wantSingleUse: true},
		{name: "bound and reusable", clusterName: "m1", reusable: true},
		{name: "any name", anyName: true, wantSingleUse: true},
		{name: "both", clusterName: "m1", anyName: true, wantErr: "give one"},
		{name: "bad name", clusterName: "M_1", wantErr: "--cluster-name"},
		{name: "server", clusterName: "m1", server: "https://hub.flotilla.svc:6443", wantSingleUse: true},
		{name: "server over http", clusterName: "m1", server: "http://hub.flotilla.svc:6443", wantErr: `--server "http://hub.flotilla.svc:6443": want https://HOST:PORT`},
		{name: "server with a path", clusterName: "m1", server: "https://hub/api", wantErr: "--server"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &tokenCreateOptions{ttl: time.Hour, anyName: tt.anyName, reusable: tt.reusable, server: tt.server}
			o.grant.ClusterName = tt.clusterName
			err := o.validate()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.grant.SingleUse != tt.wantSingleUse {
				t.Fatalf("single use = %v, want %v", o.grant.SingleUse, tt.wantSingleUse)
			}
		})
	}
}
