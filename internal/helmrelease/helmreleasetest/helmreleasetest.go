// Package helmreleasetest builds charts and chart repositories for tests, in the test process: no network.
package helmreleasetest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"sigs.k8s.io/yaml"
)

// Chart is a chart to package: its name, version, values.yaml and files by path (templates/x.yaml,
// crds/y.yaml).
type Chart struct {
	Name, Version string
	Values        map[string]any
	Files         map[string]string
}

// Package returns c packaged as `helm package` writes it.
func Package(t testing.TB, c Chart) []byte {
	t.Helper()
	ch := &chart.Chart{Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: c.Name, Version: c.Version}, Values: c.Values}
	for name, data := range c.Files {
		f := &common.File{Name: name, Data: []byte(data)}
		if strings.HasPrefix(name, "templates/") {
			ch.Templates = append(ch.Templates, f)
		} else {
			ch.Files = append(ch.Files, f)
		}
	}
	if c.Values != nil {
		raw, err := yaml.Marshal(c.Values)
		if err != nil {
			t.Fatal(err)
		}
		ch.Raw = append(ch.Raw, &common.File{Name: "values.yaml", Data: raw})
	}
	path, err := chartutil.Save(ch, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// Repo is an HTTP chart repository served from the test process.
type Repo struct {
	URL string

	mu       sync.Mutex
	archives map[string][]byte // by file name
	index    map[string][]map[string]any
	// Gets counts the requests for each path.
	gets map[string]int
}

// NewRepo serves an empty repository until the test ends.
func NewRepo(t testing.TB) *Repo {
	r := &Repo{archives: map[string][]byte{}, index: map[string][]map[string]any{}, gets: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.URL = srv.URL + "/charts"
	return r
}

// Add publishes a packaged chart under name and version, listed in index.yaml with its digest.
func (r *Repo) Add(name, version string, archive []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	file := fmt.Sprintf("%s-%s.tgz", name, version)
	sum := sha256.Sum256(archive)
	r.archives[file] = archive
	r.index[name] = append(r.index[name], map[string]any{"name": name, "version": version, "apiVersion": "v2",
		"urls": []string{file}, "digest": hex.EncodeToString(sum[:])})
}

// Gets says how many times path (index.yaml, or an archive's file name) was fetched.
func (r *Repo) Gets(path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gets[path]
}

func (r *Repo) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	path := strings.TrimPrefix(req.URL.Path, "/charts/")
	r.gets[path]++
	if path == "index.yaml" {
		raw, _ := yaml.Marshal(map[string]any{"apiVersion": "v1", "entries": r.index})
		_, _ = w.Write(raw)
		return
	}
	if data, ok := r.archives[path]; ok {
		_, _ = w.Write(data)
		return
	}
	http.NotFound(w, req)
}
