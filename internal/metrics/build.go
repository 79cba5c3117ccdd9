package metrics

import (
	"runtime"
	"runtime/debug"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

var buildDesc = prometheus.NewDesc("flotilla_build_info",
	"Always 1: the Flotilla version and source revision this process runs, and the Go version that built it.",
	[]string{"version", "revision", "goversion"}, nil)

// build reports flotilla_build_info. Until SetBuild is called it reports what Go recorded in the binary: the
// main module's version ("(devel)" for a source build) and the VCS revision, if any.
var build = newBuildInfo()

type buildInfo struct {
	mu                sync.Mutex
	version, revision string
}

func newBuildInfo() *buildInfo {
	b := &buildInfo{version: "unknown"}
	if info, ok := debug.ReadBuildInfo(); ok {
		b.version = info.Main.Version
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				b.revision = s.Value
			}
		}
	}
	return b
}

// SetBuild sets the version and revision flotilla_build_info reports: the binary's, as `flotilla version`
// prints them. An empty revision keeps the one Go recorded.
func SetBuild(version, revision string) {
	build.mu.Lock()
	defer build.mu.Unlock()
	build.version = version
	if revision != "" {
		build.revision = revision
	}
}

func (b *buildInfo) Describe(ch chan<- *prometheus.Desc) { ch <- buildDesc }

func (b *buildInfo) Collect(ch chan<- prometheus.Metric) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(buildDesc, prometheus.GaugeValue, 1, b.version, b.revision, runtime.Version())
}
