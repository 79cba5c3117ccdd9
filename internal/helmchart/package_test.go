package helmchart

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/chart/v2/loader"

	"github.com/flotilla-io/flotilla/charts"
)

// TestPackage: a packaged chart carries the release's version and appVersion (the image tag the chart's
// defaults use), loads back as Helm loads a chart, dates every file with the given time, and is the same
// bytes when packaged again a second later.
func TestPackage(t *testing.T) {
	modTime := time.Unix(1767225600, 0)
	for _, name := range []string{charts.Hub, charts.Agent} {
		t.Run(name, func(t *testing.T) {
			first, err := Package(name, "1.2.3-rc.1", "v1.2.3-rc.1", modTime, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if want := name + "-1.2.3-rc.1.tgz"; filepath.Base(first) != want {
				t.Fatalf("packaged as %s, want %s", filepath.Base(first), want)
			}
			c, err := loader.Load(first)
			if err != nil {
				t.Fatal(err)
			}
			if c.Metadata.Version != "1.2.3-rc.1" || c.Metadata.AppVersion != "v1.2.3-rc.1" || len(c.Templates) == 0 {
				t.Fatalf("the archive holds version %q, appVersion %q and %d templates", c.Metadata.Version, c.Metadata.AppVersion, len(c.Templates))
			}
			for h := range entries(t, first) {
				if !h.ModTime.Equal(modTime) {
					t.Fatalf("%s is dated %s, want %s", h.Name, h.ModTime, modTime)
				}
			}
			time.Sleep(1100 * time.Millisecond) // Helm dates files with the time of packaging, to the second
			second, err := Package(name, "1.2.3-rc.1", "v1.2.3-rc.1", modTime, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			a, _ := os.ReadFile(first)
			b, _ := os.ReadFile(second)
			if !bytes.Equal(a, b) {
				t.Fatal("the chart packaged twice differs")
			}
		})
	}
	if _, err := Package(charts.Agent, "latest", "latest", modTime, t.TempDir()); err == nil {
		t.Fatal("a chart version that is not SemVer was packaged")
	}
}

// entries yields the headers of the gzipped tar archive at path.
func entries(t *testing.T, path string) func(func(*tar.Header) bool) {
	return func(yield func(*tar.Header) bool) {
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
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				return
			} else if err != nil {
				t.Fatal(err)
			}
			if !yield(h) {
				return
			}
		}
	}
}
