package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/klog/v2"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// NewServedRegistry returns what a process without an API server of its own (the agent, a hub over an
// existing cluster) serves at /metrics: controller-runtime's registry through Bridge, under the names the
// embedded hub serves them, with client-go's, the Go runtime's and the process's metrics, and extra.
func NewServedRegistry(extra ...prometheus.Collector) (*prometheus.Registry, error) {
	r := prometheus.NewRegistry()
	all := append([]prometheus.Collector{Bridge{Source: crmetrics.Registry, Client: true},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})}, extra...)
	for _, c := range all {
		if err := r.Register(c); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Endpoints are what a Server serves over plain HTTP.
type Endpoints struct {
	// Metrics, when set, is served at /metrics.
	Metrics prometheus.Gatherer
	// Probes serves /healthz, which answers as long as the process serves, and /readyz, which answers 200
	// only while the server is set ready (SetReady) and 503 with NotReady otherwise.
	Probes   bool
	NotReady string
}

// Server serves a process's metrics and probes. A nil Server serves nothing and ignores SetReady.
type Server struct {
	ready atomic.Bool
	// Address is where it serves: the bound address, with the port a ":0" chose.
	Address string
}

// Serve serves e over plain HTTP on addr (HOST:PORT; "" or "0" serves none, and returns a nil Server) until
// ctx ends. flag names addr's flag in the error when it cannot be bound.
func Serve(ctx context.Context, addr, flag string, e Endpoints) (*Server, error) {
	if addr == "" || addr == "0" {
		return nil, nil
	}
	listener, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, addr, err)
	}
	s := &Server{Address: listener.Addr().String()}
	mux := http.NewServeMux()
	if e.Metrics != nil {
		mux.Handle("/metrics", promhttp.HandlerFor(e.Metrics, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	}
	if e.Probes {
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
		mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
			if !s.ready.Load() {
				http.Error(w, e.NotReady, http.StatusServiceUnavailable)
				return
			}
			_, _ = w.Write([]byte("ok"))
		})
	}
	server := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := server.Serve(listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.FromContext(ctx).Error(err, "serving on "+flag)
		}
	}()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = server.Shutdown(shutdown)
	}()
	return s, nil
}

// SetReady sets what /readyz answers.
func (s *Server) SetReady(ready bool) {
	if s != nil {
		s.ready.Store(ready)
	}
}
