package measure

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/google/pprof/profile"
	"k8s.io/client-go/kubernetes"
)

// Profiles of the hub are taken from its kube-apiserver's /debug/pprof, which a hub started with
// --profiling serves to its admin. They are Go's own profiles of the whole hub process: etcd, kube-apiserver,
// the embedded controllers and Flotilla's.

// HubProfileArgs are the hub's flags that make it serve its profiles.
var HubProfileArgs = []string{"--profiling"}

// RestCPUSeconds is how long the CPU profile at rest runs.
const RestCPUSeconds = 20

// cpuWindow is the length of each CPU profile taken during a wave: Go's profile endpoint profiles for a
// duration fixed in advance, and a wave's is not known, so the wave is profiled in consecutive windows that
// are merged into one profile when it ends.
const cpuWindow = 10 * time.Second

// HubProfiler saves profiles of the hub into dir; a nil HubProfiler saves none.
type HubProfiler struct {
	hub kubernetes.Interface
	dir string
}

// NewHubProfiler returns a profiler saving into dir, or nil when dir is empty.
func NewHubProfiler(hub kubernetes.Interface, dir string) (*HubProfiler, error) {
	if dir == "" {
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("--profile-dir: %w", err)
	}
	return &HubProfiler{hub: hub, dir: dir}, nil
}

// get reads one profile from /debug/pprof/name.
func (p *HubProfiler) get(ctx context.Context, name string, params map[string]string) ([]byte, error) {
	req := p.hub.Discovery().RESTClient().Get().AbsPath("/debug/pprof", name)
	for k, v := range params {
		req = req.Param(k, v)
	}
	data, err := req.DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the hub's %s profile (is it started with --profiling?): %w", name, err)
	}
	return data, nil
}

func (p *HubProfiler) save(file string, data []byte) error {
	return os.WriteFile(filepath.Join(p.dir, file), data, 0o644)
}

// AtRest saves the hub's heap after a garbage collection (hub-heap-rest.pprof), its goroutines
// (hub-goroutine-rest.pprof) and a CPU profile of RestCPUSeconds (hub-cpu-rest.pprof).
func (p *HubProfiler) AtRest(ctx context.Context) error {
	if p == nil {
		return nil
	}
	for _, prof := range []struct {
		name, file string
		params     map[string]string
	}{
		{"heap", "hub-heap-rest.pprof", map[string]string{"gc": "1"}},
		{"goroutine", "hub-goroutine-rest.pprof", nil},
		{"profile", "hub-cpu-rest.pprof", map[string]string{"seconds": strconv.Itoa(RestCPUSeconds)}},
	} {
		data, err := p.get(ctx, prof.name, prof.params)
		if err != nil {
			return err
		}
		if err := p.save(prof.file, data); err != nil {
			return err
		}
	}
	return nil
}

// CPUDuring profiles the hub's CPU from now until the returned stop is called, which waits for the last
// window to end and saves the merged profile as file.
func (p *HubProfiler) CPUDuring(ctx context.Context, file string) (stop func() error) {
	if p == nil {
		return func() error { return nil }
	}
	stopping := make(chan struct{})
	var wg sync.WaitGroup
	var windows []*profile.Profile
	var err error
	wg.Go(func() {
		for {
			data, e := p.get(ctx, "profile", map[string]string{"seconds": strconv.Itoa(int(cpuWindow.Seconds()))})
			if e == nil {
				var w *profile.Profile
				if w, e = profile.Parse(bytes.NewReader(data)); e == nil {
					windows = append(windows, w)
				}
			}
			if e != nil {
				err = e
				return
			}
			select {
			case <-stopping:
				return
			default:
			}
		}
	})
	return func() error {
		close(stopping)
		wg.Wait()
		if err != nil {
			return err
		}
		merged, err := profile.Merge(windows)
		if err != nil {
			return fmt.Errorf("merging the hub's CPU profiles: %w", err)
		}
		var out bytes.Buffer
		if err := merged.Write(&out); err != nil {
			return err
		}
		return p.save(file, out.Bytes())
	}
}

// ValidateProfileDir accepts an unset --profile-dir, an existing directory, or a path that can be made one.
func ValidateProfileDir(dir string) error {
	if dir == "" {
		return nil
	}
	info, err := os.Stat(dir)
	switch {
	case err == nil && !info.IsDir():
		return fmt.Errorf("--profile-dir %s: not a directory", dir)
	case err != nil && !os.IsNotExist(err):
		return fmt.Errorf("--profile-dir %s: %w", dir, err)
	}
	return nil
}
