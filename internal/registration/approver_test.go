package registration

import (
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/utils/ptr"
)

// TestCheckLifetime: the hub grants agent certificates up to its cap, and a request must say how long.
func TestCheckLifetime(t *testing.T) {
	a := &Approver{MaxCertTTL: 720 * time.Hour}
	tests := []struct {
		name    string
		seconds *int32
		wantErr string
	}{
		{"within the cap", ptr.To(int32((7 * 24 * time.Hour).Seconds())), ""},
		{"at the cap", ptr.To(int32((720 * time.Hour).Seconds())), ""},
		{"beyond the cap", ptr.To(int32((721 * time.Hour).Seconds())), "the hub grants at most 720h0m0s"},
		{"no lifetime", nil, "names no lifetime"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := a.checkLifetime(&certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{ExpirationSeconds: tt.seconds}})
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestParseAgentUser(t *testing.T) {
	tests := []struct {
		user, cluster, registration string
		ok                          bool
	}{
		{"system:flotilla:agent:m1:0123456789abcdef0123", "m1", "0123456789abcdef0123", true},
		{"system:flotilla:agent:m1", "m1", "", true},
		{"system:flotilla:agent:", "", "", false},
		{"system:node:m1", "", "", false},
	}
	for _, tt := range tests {
		cluster, registration, ok := ParseAgentUser(tt.user)
		if cluster != tt.cluster || registration != tt.registration || ok != tt.ok {
			t.Errorf("ParseAgentUser(%q) = %q, %q, %v", tt.user, cluster, registration, ok)
		}
	}
}
