package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/flotilla-io/flotilla/internal/bench/measure"
)

// Plot reads results written by the benchmarks' --out and draws PNG charts into dir: for each propagation
// run, the latency percentiles of every stage of its create wave; for each failover run, those of every
// failover stage; across propagation runs, member changes per second against member count; across scale
// runs, the hub's memory against cluster count. It returns the files written.
func Plot(dir string, files []string) ([]string, error) {
	var propagations []PropagationResult
	var scales []ScaleResult
	var failovers []FailoverResult
	var services []MCSResult
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var kind struct {
			Waves    json.RawMessage `json:"waves"`
			Steady   json.RawMessage `json:"steady"`
			Failover json.RawMessage `json:"failover"`
			Stages   json.RawMessage `json:"stages"`
		}
		if err := json.Unmarshal(data, &kind); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		switch {
		case kind.Waves != nil:
			var r PropagationResult
			if err := json.Unmarshal(data, &r); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			propagations = append(propagations, r)
		case kind.Steady != nil:
			var r ScaleResult
			if err := json.Unmarshal(data, &r); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			scales = append(scales, r)
		case kind.Failover != nil:
			var r FailoverResult
			if err := json.Unmarshal(data, &r); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			failovers = append(failovers, r)
		case kind.Stages != nil:
			var r MCSResult
			if err := json.Unmarshal(data, &r); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			services = append(services, r)
		default:
			return nil, fmt.Errorf("%s: not the output of bench propagation, scale, failover or mcs", f)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var written []string
	save := func(p *plot.Plot, name string) error {
		path := filepath.Join(dir, name)
		written = append(written, path)
		return p.Save(8*vg.Inch, 4*vg.Inch, path)
	}
	for _, r := range propagations {
		p, err := stageChart(r)
		if err != nil {
			return nil, err
		}
		how := "burst"
		if r.Sequential {
			how = "sequential"
		}
		if err := save(p, fmt.Sprintf("propagation-%dx%d-%s-%s.png", r.Objects, r.Members, r.Mode, how)); err != nil {
			return nil, err
		}
	}
	if len(propagations) > 1 {
		p, err := measure.LineChart("Member changes per second (create wave, all at once)", "members", "changes/s",
			propagations, func(r PropagationResult) (string, float64, float64, bool) {
				return fmt.Sprintf("%d objects", r.Objects), float64(r.Members), r.Waves[createWave.name].MemberOpsPerSecond, !r.Sequential
			})
		if err != nil {
			return nil, err
		}
		if err := save(p, "throughput-by-members.png"); err != nil {
			return nil, err
		}
	}
	if len(scales) > 0 {
		p, err := measure.LineChart("Hub memory at steady state", "hollow clusters", "RSS (MiB)",
			scales, func(r ScaleResult) (string, float64, float64, bool) {
				return fmt.Sprintf("%d Deployments per cluster", r.WorksPerCluster), float64(r.Clusters), r.Steady.HubRSSMiB, true
			})
		if err != nil {
			return nil, err
		}
		if err := save(p, "hub-rss-by-clusters.png"); err != nil {
			return nil, err
		}
	}
	for _, r := range failovers {
		p, err := failoverChart(r)
		if err != nil {
			return nil, err
		}
		if err := save(p, fmt.Sprintf("failover-%dx%d.png", r.Objects, r.Members)); err != nil {
			return nil, err
		}
	}
	for _, r := range services {
		p, err := measure.BarChart(fmt.Sprintf("Multi-cluster service, %d scale-outs of one pod over %d members: seconds", r.Changes, r.Members),
			[]string{stagePodsRunning, stageConsumer, stagePropagation}, r.Stages)
		if err != nil {
			return nil, err
		}
		if err := save(p, fmt.Sprintf("mcs-%dx%d.png", r.Changes, r.Members)); err != nil {
			return nil, err
		}
	}
	return written, nil
}

// stageChart draws p50, p90, p99 and max of each stage of a propagation run's create wave as grouped bars.
func stageChart(r PropagationResult) (*plot.Plot, error) {
	how := "all at once"
	if r.Sequential {
		how = "one at a time"
	}
	return measure.BarChart(fmt.Sprintf("%d Deployments × %d members (%s, %s): seconds from the hub request", r.Objects, r.Members, r.Mode, how),
		createWave.stages, r.Waves[createWave.name].Stages)
}

// failoverChart draws the percentiles of each failover stage, from the freeze, as grouped bars.
func failoverChart(r FailoverResult) (*plot.Plot, error) {
	return measure.BarChart(fmt.Sprintf("Failover of %d Deployments over %d members (grace %.0fs, toleration %.0fs): seconds from the freeze",
		r.Objects, r.Members, r.GracePeriodSeconds, r.TolerationSeconds), failoverStages, r.Failover)
}
