package helmrelease

import (
	"strings"
	"testing"
)

// TestCheckAddress: the hub fetches charts from public and private addresses, never from link-local
// (metadata endpoints), unspecified or multicast ones, and from loopback only when allowed.
func TestCheckAddress(t *testing.T) {
	for _, c := range []struct {
		address       string
		allowLoopback bool
		refused       bool
	}{
		{"203.0.113.7:443", false, false},
		{"10.1.2.3:8080", false, false},
		{"[2001:db8::1]:443", false, false},
		{"127.0.0.1:8080", false, true},
		{"127.0.0.1:8080", true, false},
		{"[::1]:443", false, true},
		{"[::ffff:127.0.0.1]:443", false, true},
		{"169.254.169.254:80", false, true},
		{"169.254.169.254:80", true, true},
		{"[fe80::1]:80", true, true},
		{"0.0.0.0:80", true, true},
		{"224.0.0.1:80", false, true},
	} {
		err := checkAddress(c.address, c.allowLoopback)
		if (err != nil) != c.refused || (err != nil && !strings.Contains(err.Error(), "is refused")) {
			t.Errorf("%s (loopback allowed %v): %v, want refused %v", c.address, c.allowLoopback, err, c.refused)
		}
	}
}
