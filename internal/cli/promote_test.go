package cli

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// TestPromoteValidate: bad flags and arguments are refused before anything is read, each with the flag or
// argument named.
func TestPromoteValidate(t *testing.T) {
	for _, tt := range []struct {
		name    string
		o       promoteOptions
		args    []string
		wantErr string
	}{
		{"no cluster", promoteOptions{}, []string{"deploy/web"}, "--cluster is required"},
		{"bad cluster", promoteOptions{cluster: "Member_1"}, []string{"deploy/web"}, `--cluster "Member_1"`},
		{"bad policy", promoteOptions{cluster: "m1", policy: "Not Valid"}, []string{"deploy/web"}, `--policy "Not Valid"`},
		{"no name", promoteOptions{cluster: "m1"}, []string{"deploy"}, "want KIND/NAME"},
		{"good", promoteOptions{cluster: "m1", policy: "mine"}, []string{"deploy/web", "cm/config"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.o.validate(tt.args)
			if tt.wantErr == "" {
				if err != nil || len(tt.o.targets) != len(tt.args) {
					t.Fatalf("refused: %v (targets %v)", err, tt.o.targets)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one saying %q", err, tt.wantErr)
			}
		})
	}
}

func TestPromotePolicyName(t *testing.T) {
	if got := promotePolicyName("Deployment", "web"); got != "promote-deployment-web" {
		t.Errorf("got %q", got)
	}
	long := promotePolicyName("ConfigMap", strings.Repeat("a", 240)+"-"+strings.Repeat("b", 12))
	if len(long) > validation.DNS1123SubdomainMaxLength || len(validation.IsDNS1123Subdomain(long)) > 0 {
		t.Errorf("%q (%d characters) is not a valid name", long, len(long))
	}
}
