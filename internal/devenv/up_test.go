package devenv

import (
	"strings"
	"testing"
)

func TestUpOptionsValidate(t *testing.T) {
	for _, tt := range []struct {
		name string
		o    UpOptions
		want string
	}{
		{"defaults filled in", UpOptions{Members: 3, HubPort: 6443}, ""},
		{"push", UpOptions{Members: 3, HubPort: 6443, Mode: ModePush}, ""},
		{"no members", UpOptions{Members: 0, HubPort: 6443}, "--members 0"},
		{"too many members", UpOptions{Members: 21, HubPort: 6443}, "--members 21"},
		{"bad port", UpOptions{Members: 1, HubPort: 70000}, "--hub-port 70000"},
		{"unknown mode", UpOptions{Members: 1, HubPort: 6443, Mode: "both"}, `--mode "both"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.o.Validate("/home/x")
			if tt.want == "" {
				if err != nil || tt.o.Mode == "" || tt.o.DataDir != "/home/x/.flotilla/up" {
					t.Fatalf("Validate() = %v, mode %q, data dir %q", err, tt.o.Mode, tt.o.DataDir)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestPodCIDRsDoNotOverlap: the members of the local fleet and of the e2e fleet give their pods distinct
// ranges, so a multi-cluster Service's imported addresses say which member they belong to.
func TestPodCIDRsDoNotOverlap(t *testing.T) {
	seen := map[string]string{}
	for _, m := range []string{"m1", "m2", "m3", MemberName(1), MemberName(2), MemberName(3), MemberName(4)} {
		cidr := podCIDR(m)
		if other, ok := seen[cidr]; ok {
			t.Errorf("%s and %s share pod range %s", m, other, cidr)
		}
		seen[cidr] = m
	}
}
