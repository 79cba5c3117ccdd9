package execution

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// TestFailedAppliesAreRetriedSoon: a Work whose apply failed is looked at again after half a second, then
// after twice as long with each failure in a row, never later than its resync; an apply that succeeds waits
// for the resync and forgets the failures; each Work counts its own.
func TestFailedAppliesAreRetriedSoon(t *testing.T) {
	e := &Executor{}
	web, db := types.NamespacedName{Namespace: "flotilla-cluster-a", Name: "web"}, types.NamespacedName{Namespace: "flotilla-cluster-a", Name: "db"}
	const resync = 3 * time.Second
	for i, want := range []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, resync, resync} {
		if got := e.nextAttempt(web, false, resync); got != want {
			t.Fatalf("failure %d: next attempt after %s, want %s", i+1, got, want)
		}
	}
	if got := e.nextAttempt(db, false, resync); got != applyRetryBase {
		t.Fatalf("another Work's first failure waits %s, want %s", got, applyRetryBase)
	}
	if got := e.nextAttempt(web, true, resync); got != resync {
		t.Fatalf("after a success the next look is in %s, want the resync %s", got, resync)
	}
	if got := e.nextAttempt(web, false, resync); got != applyRetryBase {
		t.Fatalf("a failure after a success waits %s, want %s", got, applyRetryBase)
	}
	if got := (&Executor{}).nextAttempt(web, true, 0); got != steadyPeriod {
		t.Fatalf("no resync set: %s, want %s", got, steadyPeriod)
	}
}
