package cmdutil

import (
	"strings"
	"testing"
)

// TestValidateHubURL: only https://HOST[:PORT] is an address of the hub.
func TestValidateHubURL(t *testing.T) {
	tests := []struct {
		url, wantErr string
	}{
		{url: "https://hub.flotilla.svc:6443"},
		{url: "https://10.0.0.1:6443/"},
		{url: "https://[::1]:6443"},
		{url: "https://hub.example.com"},
		{url: "http://hub:6443", wantErr: "want https://HOST:PORT"},
		{url: "hub:6443", wantErr: "want https://HOST:PORT"},
		{url: "https://:6443", wantErr: "want https://HOST:PORT"},
		{url: "https://hub:6443/api", wantErr: "want https://HOST:PORT"},
		{url: "https://user@hub:6443", wantErr: "want https://HOST:PORT"},
		{url: "https://hub:0", wantErr: "port 0"},
		{url: "https://hub:99999", wantErr: "port 99999"},
		{url: "", wantErr: "want https://HOST:PORT"},
	}
	for _, tt := range tests {
		err := ValidateHubURL(tt.url)
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("ValidateHubURL(%q) = %v, want %q", tt.url, err, tt.wantErr)
		}
	}
}
