package bench

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/internal/bench/hollow"
	"github.com/flotilla-io/flotilla/internal/bench/measure"
	"github.com/flotilla-io/flotilla/internal/hub"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

// RegisterOptions configure `flotilla bench register`.
type RegisterOptions struct {
	// Clusters is how many simulated agents join, first one after another, then all at once.
	Clusters int
	// Out, if set, receives the results as JSON.
	Out string
}

// RegisterResult holds agent-start-to-Ready latencies in seconds.
type RegisterResult struct {
	Clusters   int                `json:"clusters"`
	Sequential map[string]float64 `json:"sequential"`
	Concurrent map[string]float64 `json:"concurrent"`
}

// RunRegister starts a hub in this process and measures, for simulated agents, the time from agent start
// (before CA discovery) to the Cluster being Ready on the hub: discovery, CSR, approval, signing, first
// heartbeat and status, health evaluation.
func RunRegister(ctx context.Context, o RegisterOptions, out io.Writer, progress func(string)) error {
	if o.Clusters < 1 {
		return fmt.Errorf("--clusters %d: must be at least 1", o.Clusters)
	}
	dir, remove, err := workDir("register")
	if err != nil {
		return err
	}
	defer remove()
	h, stop, err := hub.StartLocal(filepath.Join(dir, "hub"), progress)
	if err != nil {
		return err
	}
	defer stop()

	kube, err := kubernetes.NewForConfig(h.Config)
	if err != nil {
		return err
	}
	admin, err := client.New(h.Config, client.Options{Scheme: scheme.New()})
	if err != nil {
		return err
	}
	access, err := hollow.NewAccess(ctx, kube, h.Config, time.Hour, "bench")
	if err != nil {
		return err
	}
	kinds := hollow.NewKinds()
	join := func(name string) (time.Duration, error) {
		start := time.Now()
		a, err := hollow.Join(ctx, access, dir, name, kinds)
		if err != nil {
			return 0, err
		}
		if err := a.FirstHeartbeat(ctx); err != nil {
			return 0, err
		}
		if err := hollow.WaitReady(ctx, admin, name); err != nil {
			return 0, err
		}
		return time.Since(start), nil
	}

	result := RegisterResult{Clusters: o.Clusters}
	progress(fmt.Sprintf("%d agents joining one after another", o.Clusters))
	var seq []time.Duration
	for i := range o.Clusters {
		d, err := join(fmt.Sprintf("seq-%d", i))
		if err != nil {
			return err
		}
		seq = append(seq, d)
	}
	result.Sequential = measure.Percentiles(seq)

	progress(fmt.Sprintf("%d agents joining at once", o.Clusters))
	conc := make([]time.Duration, o.Clusters)
	errs := make([]error, o.Clusters)
	var wg sync.WaitGroup
	for i := range o.Clusters {
		wg.Go(func() { conc[i], errs[i] = join(fmt.Sprintf("conc-%d", i)) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	result.Concurrent = measure.Percentiles(conc)

	fmt.Fprintf(out, "agent start → Cluster Ready, %d clusters (seconds)\n", o.Clusters)
	fmt.Fprintf(out, "%-12s %8s %8s %8s %8s\n", "joins", "p50", "p90", "p99", "max")
	for _, row := range []struct {
		name string
		p    map[string]float64
	}{{"sequential", result.Sequential}, {"concurrent", result.Concurrent}} {
		fmt.Fprintf(out, "%-12s %8.3f %8.3f %8.3f %8.3f\n", row.name, row.p["p50"], row.p["p90"], row.p["p99"], row.p["max"])
	}
	return writeJSON(o.Out, &result)
}
