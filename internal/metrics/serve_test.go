package metrics

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

// get returns the status and body of url.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// TestServedMetricsAndProbes: what the agent and a hub over an existing cluster serve on their plain-HTTP
// port: flotilla_build_info with the version set and the Go version, the heartbeat as a time (seconds since
// the epoch, gone with its cluster), the Go runtime's series, and probes whose /readyz follows SetReady.
func TestServedMetricsAndProbes(t *testing.T) {
	RegisterHub()
	SetBuild("v1.2.3", "0123abc")
	seen := time.Unix(1_700_000_000, 500_000_000)
	ObserveHeartbeat("served-a", seen)
	ObserveHeartbeat("served-gone", seen)
	ForgetHeartbeat("served-gone")

	served, err := NewServedRegistry()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := Serve(ctx, "127.0.0.1:0", "--metrics-port", Endpoints{Metrics: served, Probes: true, NotReady: "not yet"})
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + s.Address
	code, body := get(t, base+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d\n%s", code, body)
	}
	for _, want := range []string{
		fmt.Sprintf(`flotilla_build_info{goversion=%q,revision="0123abc",version="v1.2.3"} 1`, runtime.Version()),
		`flotilla_cluster_heartbeat_timestamp_seconds{cluster="served-a"} 1.7000000005e+09`,
		"go_goroutines ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics has no %s", want)
		}
	}
	if strings.Contains(body, "served-gone") {
		t.Errorf("/metrics still has the heartbeat of a forgotten cluster")
	}
	if code, _ := get(t, base+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d, want 200", code)
	}
	if code, body := get(t, base+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "not yet") {
		t.Errorf("/readyz before ready: %d %q, want 503 saying not yet", code, body)
	}
	s.SetReady(true)
	if code, _ := get(t, base+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz when ready: %d, want 200", code)
	}
}

// TestServeRefusesATakenAddress: an address that cannot be bound is an error naming the flag.
func TestServeRefusesATakenAddress(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first, err := Serve(ctx, "127.0.0.1:0", "--a", Endpoints{Probes: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Serve(ctx, first.Address, "--metrics-bind-address", Endpoints{Probes: true}); err == nil || !strings.HasPrefix(err.Error(), "--metrics-bind-address "+first.Address) {
		t.Fatalf("error = %v, want one naming --metrics-bind-address", err)
	}
	if s, err := Serve(ctx, "0", "--a", Endpoints{Probes: true}); s != nil || err != nil {
		t.Fatalf("address 0 served %v, %v; want nothing", s, err)
	}
}
