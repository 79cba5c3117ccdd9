package helmrelease

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/yaml"
)

// Bounds of what the hub fetches for a chart. A chart archive is a few tens of KiB (the largest public charts
// a few MiB); a repository's index.yaml grows with every version it lists (Bitnami's passed 10 MiB before it
// was split), so it is bounded apart.
const (
	MaxChartBytes  = 10 << 20
	MaxIndexBytes  = 32 << 20
	FetchTimeout   = 30 * time.Second
	cachedArchives = 64
)

// Fetcher fetches packaged charts from HTTP(S) chart repositories and OCI registries, bounded in size and time,
// and keeps the last cachedArchives archives by repository, chart and version: a version in a repository
// does not change, so each is fetched once per hub process however many clusters and renders use it.
type Fetcher struct {
	// HTTP fetches from repositories (when nil, a client with FetchTimeout whose transport refuses the
	// addresses transport names); its Transport, when set, is the one OCI pulls use too (when not, they use
	// that same guarded transport).
	HTTP *http.Client
	// AllowLoopback lets the default client fetch from the hub's own machine (a local fleet).
	AllowLoopback bool

	mu    sync.Mutex
	cache map[string][]byte
	order []string
}

func (f *Fetcher) client() *http.Client {
	if f.HTTP != nil {
		return f.HTTP
	}
	return &http.Client{Timeout: FetchTimeout, Transport: transport(f.AllowLoopback)}
}

// Fetch returns the packaged chart (.tgz) of chart at version in repo.
func (f *Fetcher) Fetch(ctx context.Context, repo, chart, version string) ([]byte, error) {
	key := repo + "|" + chart + "|" + version
	if data, ok := f.cached(key); ok {
		return data, nil
	}
	fetch := f.fetchHTTP
	if IsOCI(repo) {
		fetch = f.fetchOCI
	}
	data, err := fetch(ctx, repo, chart, version)
	if err != nil {
		return nil, err
	}
	f.keep(key, data)
	return data, nil
}

// index is the part of a repository's index.yaml the hub reads.
type index struct {
	Entries map[string][]struct {
		Version string   `json:"version"`
		URLs    []string `json:"urls"`
		Digest  string   `json:"digest"`
	} `json:"entries"`
}

// fetchHTTP resolves the chart's archive through the repository's index.yaml, as `helm pull --repo` does,
// and checks the archive's digest when the index gives one.
func (f *Fetcher) fetchHTTP(ctx context.Context, repo, chart, version string) ([]byte, error) {
	base, err := url.Parse(strings.TrimSuffix(repo, "/") + "/")
	if err != nil {
		return nil, err
	}
	raw, err := f.get(ctx, base.JoinPath("index.yaml").String(), MaxIndexBytes)
	if err != nil {
		return nil, err
	}
	idx := &index{}
	if err := yaml.Unmarshal(raw, idx); err != nil {
		return nil, fmt.Errorf("%sindex.yaml: %w", base, err)
	}
	for _, v := range idx.Entries[chart] {
		if strings.TrimPrefix(v.Version, "v") != strings.TrimPrefix(version, "v") || len(v.URLs) == 0 {
			continue
		}
		ref, err := url.Parse(v.URLs[0])
		if err != nil {
			return nil, fmt.Errorf("chart %s %s: url %q: %w", chart, version, v.URLs[0], err)
		}
		u := base.ResolveReference(ref)
		if u.Scheme != "http" && u.Scheme != "https" {
			return nil, fmt.Errorf("chart %s %s: url %s is not http(s)", chart, version, u)
		}
		data, err := f.get(ctx, u.String(), MaxChartBytes)
		if err != nil {
			return nil, err
		}
		if v.Digest != "" {
			if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != strings.TrimPrefix(v.Digest, "sha256:") {
				return nil, fmt.Errorf("chart %s %s from %s: digest %x, the index says %s", chart, version, u, sum, v.Digest)
			}
		}
		return data, nil
	}
	return nil, fmt.Errorf("repository %s has no chart %s version %s", repo, chart, version)
}

// get reads url, refusing more than limit bytes.
func (f *Fetcher) get(ctx context.Context, url string, limit int64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, FetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := f.client().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("GET %s: larger than %d bytes", url, limit)
	}
	return data, nil
}

func (f *Fetcher) cached(key string) ([]byte, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	data, ok := f.cache[key]
	return data, ok
}

// keep caches an archive, forgetting the oldest beyond cachedArchives.
func (f *Fetcher) keep(key string, data []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cache == nil {
		f.cache = map[string][]byte{}
	}
	if _, ok := f.cache[key]; ok {
		return
	}
	f.cache[key] = data
	f.order = append(f.order, key)
	if len(f.order) > cachedArchives {
		delete(f.cache, f.order[0])
		f.order = f.order[1:]
	}
}
