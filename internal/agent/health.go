package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"
)

// Health serves the agent's probes: /healthz answers while the process serves (also while a join waits for
// its token or for flotilla accept, which may take long), /readyz once the agent has joined and runs with a
// current hub certificate. A nil Health serves nothing and ignores SetReady.
type Health struct {
	ready atomic.Bool
	// Address is where the probes are served (the bound address, with the port a ":0" chose).
	Address string
}

// ServeHealth serves the probes on addr (HOST:PORT; "" or "0" serves none) until ctx ends.
func ServeHealth(ctx context.Context, addr string) (*Health, error) {
	if addr == "" || addr == "0" {
		return nil, nil
	}
	listener, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--health-probe-bind-address %s: %w", addr, err)
	}
	h := &Health{Address: listener.Addr().String()}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !h.ready.Load() {
			http.Error(w, "not joined, or not running with a current hub certificate", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	server := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := server.Serve(listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.FromContext(ctx).Error(err, "serving the health probes")
		}
	}()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = server.Shutdown(shutdown)
	}()
	return h, nil
}

// SetReady sets what /readyz answers.
func (h *Health) SetReady(ready bool) {
	if h != nil {
		h.ready.Store(ready)
	}
}
