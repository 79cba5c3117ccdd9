package registration

import (
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
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

// TestRegistered: only the request a Cluster records (UID and public key) registered its agent; the agent user
// alone, which anyone who reads Clusters sees, is not enough.
func TestRegistered(t *testing.T) {
	const user = "system:flotilla:agent:m1:0123456789abcdef0123"
	r := joinRequest{csr: &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{UID: "uid-1"}}, cluster: "m1", user: user, key: "sha256:aa"}
	recorded := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "m1"}}
	r.record(recorded)
	tests := []struct {
		name string
		edit func(a map[string]string)
		want bool
	}{
		{"the recording request", func(map[string]string) {}, true},
		{"another request with the same agent user", func(a map[string]string) { a[clusterv1alpha1.AnnotationRegistrationRequest] = "uid-2" }, false},
		{"another key", func(a map[string]string) { a[clusterv1alpha1.AnnotationAgentKey] = "sha256:bb" }, false},
		{"another agent user", func(a map[string]string) { a[clusterv1alpha1.AnnotationAgentUser] = user + "x" }, false},
		{"a Cluster of an earlier version, which records no request", func(a map[string]string) {
			delete(a, clusterv1alpha1.AnnotationRegistrationRequest)
			delete(a, clusterv1alpha1.AnnotationAgentKey)
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := recorded.DeepCopy()
			tt.edit(c.Annotations)
			if got := r.registered(c); got != tt.want {
				t.Fatalf("registered = %v, want %v", got, tt.want)
			}
		})
	}
}
