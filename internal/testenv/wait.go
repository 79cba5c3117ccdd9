package testenv

import (
	"testing"
	"time"
)

// Eventually calls check every 100ms until it returns nil, and fails the test with check's last error when
// timeout passes first. The timeout bounds a wait for a condition; it is not a performance assertion.
func Eventually(t testing.TB, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still failing after %s: %v", what, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
