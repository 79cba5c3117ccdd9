// Package helmreleasetest builds charts and chart repositories for tests, in the test process: no network.
package helmreleasetest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
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

// Registry is an OCI registry served over HTTPS from the test process: the part of the distribution API that
// `helm pull oci://` uses (/v2/, then manifests and blobs by tag or digest, GET and HEAD), anonymous.
type Registry struct {
	// URL is the charts' repository, oci://127.0.0.1:PORT/charts.
	URL string
	// Client trusts the registry's certificate.
	Client *http.Client
	// CertificatePEM is the registry's self-signed certificate, for a process that cannot be given Client.
	CertificatePEM []byte

	mu        sync.Mutex
	manifests map[string][]byte // by "name:tag" and "name@digest"
	blobs     map[string][]byte // by digest
	// served replaces a blob's bytes when served (a registry that serves what its manifest does not say).
	served map[string][]byte
	gets   map[string]int
}

// NewRegistry serves an empty registry until the test ends.
func NewRegistry(t testing.TB) *Registry {
	r := &Registry{manifests: map[string][]byte{}, blobs: map[string][]byte{}, served: map[string][]byte{}, gets: map[string]int{}}
	srv := httptest.NewTLSServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.URL = "oci://" + strings.TrimPrefix(srv.URL, "https://") + "/charts"
	r.Client = srv.Client()
	r.CertificatePEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return r
}

func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Add publishes a packaged chart as `helm push` does: a manifest tagged with the version ('+' written '_')
// whose config is the chart's metadata and whose one layer is the archive. It returns the layer's digest.
func (r *Registry) Add(name, version string, archive []byte) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	config, _ := json.Marshal(map[string]string{"apiVersion": "v2", "name": name, "version": version})
	layer := digestOf(archive)
	r.blobs[digestOf(config)] = config
	r.blobs[layer] = archive
	manifest, _ := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        map[string]any{"mediaType": "application/vnd.cncf.helm.config.v1+json", "digest": digestOf(config), "size": len(config)},
		"layers":        []map[string]any{{"mediaType": "application/vnd.cncf.helm.chart.content.v1.tar+gzip", "digest": layer, "size": len(archive)}},
	})
	r.manifests[name+":"+strings.ReplaceAll(version, "+", "_")] = manifest
	r.manifests[name+"@"+digestOf(manifest)] = manifest
	return layer
}

// Serve makes the registry serve data in place of the blob of digest, its manifest unchanged.
func (r *Registry) Serve(digest string, data []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.served[digest] = data
}

// Gets says how many GETs the blob of digest had.
func (r *Registry) Gets(digest string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gets[digest]
}

func (r *Registry) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		http.Error(w, "read-only registry", http.StatusMethodNotAllowed)
		return
	}
	path := req.URL.Path
	if path == "/v2/" {
		return
	}
	name, rest, ok := strings.Cut(strings.TrimPrefix(path, "/v2/charts/"), "/")
	if !ok || !strings.HasPrefix(path, "/v2/charts/") {
		http.NotFound(w, req)
		return
	}
	var data []byte
	switch kind, ref, _ := strings.Cut(rest, "/"); kind {
	case "manifests":
		sep := ":"
		if strings.HasPrefix(ref, "sha256:") {
			sep = "@"
		}
		if data, ok = r.manifests[name+sep+ref]; ok {
			w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
			w.Header().Set("Docker-Content-Digest", digestOf(data))
		}
	case "blobs":
		if data, ok = r.blobs[ref]; ok {
			if req.Method == http.MethodGet {
				r.gets[ref]++
			}
			if served, replaced := r.served[ref]; replaced {
				data = served
			}
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("Docker-Content-Digest", ref)
		}
	}
	if !ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"errors":[{"code":"MANIFEST_UNKNOWN","message":"not found"}]}`))
		return
	}
	w.Header().Set("Content-Length", fmt.Sprint(len(data)))
	if req.Method == http.MethodGet {
		_, _ = w.Write(data)
	}
}
