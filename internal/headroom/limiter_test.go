package headroom

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// take acquires n slots that the bound lets through at once.
func take(t *testing.T, l *Limiter, n int) {
	t.Helper()
	for range n {
		if heldBack, err := l.Acquire(context.Background()); err != nil || heldBack {
			t.Fatalf("Acquire: held back %v, %v", heldBack, err)
		}
	}
}

// full returns a Limiter whose bound a user's slow write, answered ago, brought to MinLimit, with both its
// slots taken.
func full(t *testing.T, ago time.Duration) *Limiter {
	t.Helper()
	l := New(nil)
	take(t, l, MinLimit)
	l.ObserveUser(time.Now(), time.Millisecond)
	l.ObserveUser(time.Now().Add(-ago-time.Second), time.Second)
	if got := l.Limit(); got != MinLimit {
		t.Fatalf("limit %d after a slow user's write, want %d", got, MinLimit)
	}
	return l
}

func TestSlowUserWritesHalveTheWritesInFlight(t *testing.T) {
	l := New(nil)
	take(t, l, 10)
	// The baseline: a controllers' write answered in 2 ms.
	l.Release(false, true, 2*time.Millisecond)
	if got := l.Limit(); got != MaxLimit {
		t.Fatalf("limit %d after a fast write, want %d", got, MaxLimit)
	}
	// A user's write within 2 × 2 ms + 10 ms is not slow.
	now := time.Now()
	l.ObserveUser(now, 13*time.Millisecond)
	if got := l.Limit(); got != MaxLimit {
		t.Fatalf("limit %d after a user's write of 13 ms, want %d", got, MaxLimit)
	}
	// A slow one: half of the 9 writes in flight.
	l.ObserveUser(now, 100*time.Millisecond)
	if got := l.Limit(); got != 4 {
		t.Fatalf("limit %d after a slow user's write with 9 in flight, want 4", got)
	}
	// Another slow write sent before that fall answers to the old bound: no second fall.
	l.ObserveUser(now.Add(50*time.Millisecond), 100*time.Millisecond)
	if got := l.Limit(); got != 4 {
		t.Fatalf("limit %d after a slow write sent before the fall, want 4", got)
	}
	// One sent after it halves again, never below MinLimit.
	for i := range 3 {
		l.ObserveUser(now.Add(time.Duration(i+1)*time.Second), 100*time.Millisecond)
	}
	if got := l.Limit(); got != MinLimit {
		t.Fatalf("limit %d after slow writes in later rounds, want %d", got, MinLimit)
	}
}

func TestIdleControllersFallToTheMinimum(t *testing.T) {
	l := New(nil)
	l.ObserveUser(time.Now(), 2*time.Millisecond)
	l.ObserveUser(time.Now(), time.Second)
	if got := l.Limit(); got != MinLimit {
		t.Fatalf("limit %d after a slow user's write with nothing in flight, want %d", got, MinLimit)
	}
}

func TestHeldBackWritesRaiseTheBound(t *testing.T) {
	// The users' slow write was answered more than a round (its own time) ago.
	l := full(t, 2*time.Second)
	third := make(chan bool)
	go func() {
		heldBack, err := l.Acquire(context.Background())
		if err != nil {
			t.Error(err)
		}
		third <- heldBack
	}()
	select {
	case <-third:
		t.Fatal("a third write went through a bound of 2")
	case <-time.After(50 * time.Millisecond):
	}
	// An answer that had not been held back frees a slot and leaves the bound.
	l.Release(false, true, time.Millisecond)
	if heldBack := <-third; !heldBack {
		t.Fatal("the third write was not reported held back")
	}
	if got := l.Limit(); got != MinLimit {
		t.Fatalf("limit %d after an answer not held back, want %d", got, MinLimit)
	}
	// The held-back write's answer raises it by one; a failed write (no answer) does not.
	l.Release(true, true, time.Millisecond)
	if got := l.Limit(); got != MinLimit+1 {
		t.Fatalf("limit %d after a held-back write's answer, want %d", got, MinLimit+1)
	}
	take(t, l, 1)
	l.Release(true, false, 0)
	if got := l.Limit(); got != MinLimit+1 {
		t.Fatalf("limit %d after a failed write, want %d", got, MinLimit+1)
	}
}

func TestNoGrowthWhileUsersWait(t *testing.T) {
	// A user's write of 1 s answered just now: for the next second the bound stays.
	l := full(t, 0)
	l.Release(true, true, time.Millisecond)
	if got := l.Limit(); got != MinLimit {
		t.Fatalf("limit %d after a held-back answer within the users' round, want %d", got, MinLimit)
	}
}

func TestAWaitEndsWithItsContext(t *testing.T) {
	l := full(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := l.Acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire past its deadline: %v", err)
	}
	// The abandoned wait holds no slot: with one slot back, the next write goes through at once.
	l.Release(false, true, time.Millisecond)
	take(t, l, 1)
}

func TestWrapBoundsOnlyWrites(t *testing.T) {
	l := full(t, 0)
	sent := make(chan string, 10)
	rt := l.Wrap(roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		sent <- req.Method + " " + req.URL.Path
		return &http.Response{StatusCode: http.StatusOK}, nil
	}))
	free := []struct{ method, path string }{
		{http.MethodGet, "/apis/apps/v1/namespaces/a/deployments/web"},
		{http.MethodPut, "/apis/coordination.k8s.io/v1/namespaces/flotilla-system/leases/flotilla-controllers"},
	}
	for _, f := range free {
		req := httptest.NewRequest(f.method, f.path, nil)
		if _, err := rt.RoundTrip(req); err != nil {
			t.Fatalf("%s %s: %v", f.method, f.path, err)
		}
		if got := <-sent; got != f.method+" "+f.path {
			t.Fatalf("sent %q", got)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, http.MethodPatch, "/apis/work.flotilla.io/v1alpha1/namespaces/a/resourcebindings/web", nil)
	if _, err := rt.RoundTrip(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a write past a full bound: %v", err)
	}
	if len(sent) != 0 {
		t.Fatalf("the held-back write was sent: %s", <-sent)
	}
}

func TestObserveTimesUsersWritesOnly(t *testing.T) {
	l := New(nil)
	l.ObserveUser(time.Now(), time.Millisecond)
	handler := l.Observe(func(u user.Info) bool { return u.GetName() == "system:flotilla:controllers" })(
		http.HandlerFunc(func(http.ResponseWriter, *http.Request) { time.Sleep(30 * time.Millisecond) }))
	serve := func(name, method string) {
		req := httptest.NewRequest(method, "/api/v1/namespaces/a/configmaps", nil)
		req = req.WithContext(request.WithUser(req.Context(), &user.DefaultInfo{Name: name}))
		handler.ServeHTTP(httptest.NewRecorder(), req)
	}
	serve("system:flotilla:controllers", http.MethodPost)
	serve("alice", http.MethodGet)
	if got := l.Limit(); got != MaxLimit {
		t.Fatalf("limit %d after a component's write and a user's read, want %d", got, MaxLimit)
	}
	serve("alice", http.MethodPost)
	if got := l.Limit(); got != MinLimit {
		t.Fatalf("limit %d after a user's slow write, want %d", got, MinLimit)
	}
}
