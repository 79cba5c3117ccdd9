package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/flotilla-io/flotilla/internal/bench/measure"
)

// GetClustersOptions configure `flotilla bench get-clusters`.
type GetClustersOptions struct {
	// Clusters is the number of hollow clusters the hub holds.
	Clusters int
	// Requests is how many times the command is timed.
	Requests int
	// Compare, if set, is another flotilla binary (an earlier build, say) timed the same way on the same
	// fleet (the table only), for a before and after.
	Compare string
	// Out, if set, receives the results as JSON.
	Out string
}

// Validate refuses options that cannot run, naming the flag.
func (o GetClustersOptions) Validate() error {
	if o.Clusters < 1 {
		return fmt.Errorf("--clusters %d: must be at least 1", o.Clusters)
	}
	if o.Requests < 1 {
		return fmt.Errorf("--requests %d: must be at least 1", o.Requests)
	}
	return nil
}

// GetClustersResult is what `flotilla bench get-clusters` measured: the command's wall time in seconds,
// from process start to exit, for the table and for -o wide (and the table of the compared binary).
type GetClustersResult struct {
	Clusters int                           `json:"clusters"`
	Requests int                           `json:"requests"`
	Seconds  map[string]map[string]float64 `json:"seconds"`
}

// RunGetClusters starts a hub with o.Clusters hollow clusters (as bench scale does), then runs `flotilla get
// clusters` as a person would, a process of this binary with the hub's admin kubeconfig, o.Requests times
// per output, and checks that each printed a row per cluster.
func RunGetClusters(ctx context.Context, o GetClustersOptions, out io.Writer, progress func(string)) error {
	if err := o.Validate(); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	fleet, err := startHollowFleet(ctx, "get-clusters", o.Clusters, progress)
	if err != nil {
		return err
	}
	defer fleet.stop()
	kubeconfig := filepath.Join(fleet.hubDir, "admin.kubeconfig")
	result := GetClustersResult{Clusters: o.Clusters, Requests: o.Requests, Seconds: map[string]map[string]float64{}}
	runs := []struct{ name, binary, output string }{{"table", self, ""}, {"wide", self, "wide"}}
	if o.Compare != "" {
		runs = append(runs, struct{ name, binary, output string }{"compare-table", o.Compare, ""})
	}
	for _, run := range runs {
		args := []string{"get", "clusters", "--kubeconfig", kubeconfig, "--no-headers"}
		if run.output != "" {
			args = append(args, "-o", run.output)
		}
		progress(fmt.Sprintf("timing %s %s, %d times", run.binary, strings.Join(args, " "), o.Requests))
		times := make([]time.Duration, 0, o.Requests)
		for range o.Requests {
			var stdout, stderr bytes.Buffer
			cmd := exec.CommandContext(ctx, run.binary, args...)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			start := time.Now()
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("flotilla get clusters: %w: %s", err, stderr.String())
			}
			times = append(times, time.Since(start))
			if rows := strings.Count(stdout.String(), "\n"); rows != o.Clusters {
				return fmt.Errorf("flotilla get clusters printed %d rows, want %d", rows, o.Clusters)
			}
		}
		result.Seconds[run.name] = measure.Percentiles(times)
	}
	fmt.Fprintf(out, "flotilla get clusters at %d hollow clusters (seconds, %d runs)\n", o.Clusters, o.Requests)
	fmt.Fprintf(out, "%-14s %8s %8s %8s\n", "output", "p50", "p90", "max")
	for _, run := range runs {
		p := result.Seconds[run.name]
		fmt.Fprintf(out, "%-14s %8.3f %8.3f %8.3f\n", run.name, p["p50"], p["p90"], p["max"])
	}
	return writeJSON(o.Out, &result)
}
