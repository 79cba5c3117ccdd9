package agent

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestHealth: /healthz answers from the start, /readyz only while the agent runs joined; "0" serves nothing.
func TestHealth(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h, err := ServeHealth(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) int {
		t.Helper()
		resp, err := http.Get("http://" + h.Address + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	if got := get("/healthz"); got != http.StatusOK {
		t.Fatalf("/healthz = %d before joining, want 200", got)
	}
	if got := get("/readyz"); got != http.StatusServiceUnavailable {
		t.Fatalf("/readyz = %d before joining, want 503", got)
	}
	h.SetReady(true)
	if got := get("/readyz"); got != http.StatusOK {
		t.Fatalf("/readyz = %d while running, want 200", got)
	}
	h.SetReady(false)
	if got := get("/readyz"); got != http.StatusServiceUnavailable {
		t.Fatalf("/readyz = %d after stopping, want 503", got)
	}

	none, err := ServeHealth(ctx, "0")
	if err != nil || none != nil {
		t.Fatalf(`ServeHealth("0") = %v, %v; want nothing served`, none, err)
	}
	none.SetReady(true) // a nil Health ignores it
	if _, err := ServeHealth(ctx, h.Address); err == nil || !strings.Contains(err.Error(), "--health-probe-bind-address") {
		t.Fatalf("a taken address: %v", err)
	}
}
