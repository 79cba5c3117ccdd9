package testenv

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
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

// EventuallyGone waits until reading obj answers NotFound; any other answer, an error included, means it may
// still be there.
func EventuallyGone(t testing.TB, c client.Reader, obj client.Object, timeout time.Duration) {
	t.Helper()
	key := client.ObjectKeyFromObject(obj)
	Eventually(t, timeout, fmt.Sprintf("%T %s gone", obj, key), func() error {
		if err := c.Get(context.Background(), key, obj); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	})
}
