package main

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestChartVersion(t *testing.T) {
	for version, want := range map[string]string{
		"v0.3.0":                    "0.3.0",
		"v1.2.3-rc.1":               "1.2.3-rc.1",
		"v0.3.0-4-gabcdef0":         "0.3.0-4-gabcdef0",
		"v0.3.0-4-gabcdef0-dirty":   "0.3.0-4-gabcdef0-dirty",
		"abcdef0":                   "0.0.0-dev-abcdef0",
		"0123456-dirty":             "0.0.0-dev-0123456-dirty",
		"v0.0.0-dev":                "0.0.0-dev",
		"release_2026.12+build/x y": "0.0.0-dev-release-2026-12-build-x-y",
	} {
		if got := ChartVersion(version); got != want {
			t.Errorf("ChartVersion(%q) = %q, want %q", version, got, want)
		}
	}
}

// TestRelease: from the binaries in dist, release writes both charts, one krew archive per architecture
// holding kubectl-flotilla, a krew manifest naming each archive with its SHA-256, and SHA256SUMS of every
// file; the same inputs give the same bytes again.
func TestRelease(t *testing.T) {
	var sums []string
	for range 2 {
		dist := t.TempDir()
		for _, arch := range []string{"amd64", "arm64"} {
			for _, name := range []string{"flotilla", "kubectl-flotilla"} {
				if err := os.WriteFile(filepath.Join(dist, Binary(name, "abcdef0", arch)), []byte(name+" for "+arch), 0o755); err != nil {
					t.Fatal(err)
				}
			}
		}
		o := &options{dist: dist, version: "abcdef0", sourceDateEpoch: 1767225600, arches: []string{"amd64", "arm64"},
			downloadURL: "https://example.com/VERSION"}
		if err := run(o); err != nil {
			t.Fatal(err)
		}
		for _, chart := range []string{"flotilla-0.0.0-dev-abcdef0.tgz", "flotilla-agent-0.0.0-dev-abcdef0.tgz"} {
			if _, err := os.Stat(filepath.Join(dist, chart)); err != nil {
				t.Fatal(err)
			}
		}

		data, err := os.ReadFile(filepath.Join(dist, "plugin.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var manifest struct {
			APIVersion string `json:"apiVersion"`
			Kind       string
			Metadata   struct{ Name string }
			Spec       struct {
				Version, Homepage, ShortDescription, Description string
				Platforms                                        []struct {
					Selector         struct{ MatchLabels map[string]string }
					URI, SHA256, Bin string
				}
			}
		}
		if err := yaml.UnmarshalStrict(data, &manifest); err != nil {
			t.Fatalf("plugin.yaml: %v\n%s", err, data)
		}
		if manifest.Kind != "Plugin" || manifest.Metadata.Name != "flotilla" || manifest.Spec.Version != "v0.0.0-dev-abcdef0" || len(manifest.Spec.Platforms) != 2 {
			t.Fatalf("plugin.yaml:\n%s", data)
		}
		for _, p := range manifest.Spec.Platforms {
			arch := p.Selector.MatchLabels["arch"]
			archive := PluginArchive("abcdef0", arch)
			if p.URI != "https://example.com/abcdef0/"+archive || p.SHA256 != sha256File(t, filepath.Join(dist, archive)) || p.Bin != "kubectl-flotilla" {
				t.Errorf("plugin.yaml platform %+v does not name %s and its SHA-256", p, archive)
			}
			if got := archived(t, filepath.Join(dist, archive)); got != "kubectl-flotilla for "+arch {
				t.Errorf("%s holds %q", archive, got)
			}
		}

		data, err = os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
		if len(lines) != 9 { // 4 binaries, 2 charts, 2 archives, plugin.yaml
			t.Fatalf("SHA256SUMS has %d lines, want 9:\n%s", len(lines), data)
		}
		for _, line := range lines {
			sum, name, ok := strings.Cut(line, "  ")
			if !ok || sum != sha256File(t, filepath.Join(dist, name)) {
				t.Errorf("SHA256SUMS line %q does not match the file", line)
			}
		}
		sums = append(sums, string(data))
	}
	if sums[0] != sums[1] {
		t.Fatalf("two releases of the same binaries differ:\n%s\n%s", sums[0], sums[1])
	}
}

func sha256File(t *testing.T, path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// archived returns the content of kubectl-flotilla, the one file of a krew archive.
func archived(t *testing.T, path string) string {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	h, err := tr.Next()
	if err != nil || h.Name != "kubectl-flotilla" || h.Mode != 0o755 {
		t.Fatalf("first entry %+v, %v: want kubectl-flotilla, mode 0755", h, err)
	}
	data, err := io.ReadAll(tr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Next(); err != io.EOF {
		t.Fatalf("more than kubectl-flotilla in the archive (%v)", err)
	}
	return string(data)
}
