package cli

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// TestCertificateExpiry: describe cluster says when the agent's certificate expires, and how to recover once
// it has.
func TestCertificateExpiry(t *testing.T) {
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	cluster := func(expires string) *clusterv1alpha1.Cluster {
		c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "m1"}}
		if expires != "" {
			c.Annotations = map[string]string{clusterv1alpha1.AnnotationAgentCertificateExpires: expires}
		}
		return c
	}
	for _, tt := range []struct{ expires, want string }{
		{"", "not recorded"},
		{"2026-12-09T00:00:00Z", "expires 2026-12-09T00:00:00Z (in 168h0m0s)"},
		{"2026-12-01T00:00:00Z", "EXPIRED at 2026-12-01T00:00:00Z: run flotilla join again on the agent's data directory with a new token, then flotilla accept m1"},
	} {
		if got := certificateExpiry(cluster(tt.expires), now); !strings.Contains(got, tt.want) {
			t.Errorf("expiry %q: %q, want %q", tt.expires, got, tt.want)
		}
	}
}
