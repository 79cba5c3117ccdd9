package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestPlot(t *testing.T) {
	dir := t.TempDir()
	stages := map[string]map[string]float64{}
	for _, s := range createWave.stages {
		stages[s] = map[string]float64{"p50": 0.1, "p90": 0.2, "p99": 0.3, "max": 0.4}
	}
	var files []string
	for i, r := range []any{
		PropagationResult{Members: 1, Objects: 10, Mode: "pull", Waves: map[string]WaveResult{"create": {Stages: stages, MemberOpsPerSecond: 5}}},
		PropagationResult{Members: 2, Objects: 10, Mode: "pull", Waves: map[string]WaveResult{"create": {Stages: stages, MemberOpsPerSecond: 8}}},
		ScaleResult{Clusters: 10, Steady: SteadyState{HubRSSMiB: 400}},
		ScaleResult{Clusters: 100, Steady: SteadyState{HubRSSMiB: 500}},
		FailoverResult{Members: 3, Objects: 10, GracePeriodSeconds: 20, TolerationSeconds: 20,
			Failover: map[string]map[string]float64{stageRescheduled: {"p50": 40}, stageReplacementAvailable: {"p50": 42, "max": 45}}},
		MCSResult{Members: 3, Changes: 20, Stages: map[string]map[string]float64{stageConsumer: {"p50": 1.4, "max": 2.9}}},
	} {
		f := filepath.Join(dir, string(rune('a'+i))+".json")
		if err := writeJSON(f, r); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	written, err := Plot(dir, files)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"propagation-10x1-pull-burst.png", "propagation-10x2-pull-burst.png", "throughput-by-members.png", "hub-rss-by-clusters.png",
		"failover-10x3.png", "mcs-20x3.png"}
	if len(written) != len(want) {
		t.Fatalf("wrote %v, want %v", written, want)
	}
	for i, name := range want {
		data, err := os.ReadFile(written[i])
		if err != nil || filepath.Base(written[i]) != name || !bytes.HasPrefix(data, []byte("\x89PNG")) {
			t.Errorf("%s: %v, not a PNG named %s", written[i], err, name)
		}
	}
	if _, err := Plot(dir, []string{filepath.Join(dir, "propagation-10x1-pull-burst.png")}); err == nil {
		t.Error("want an error for a file that is not benchmark JSON")
	}
}
