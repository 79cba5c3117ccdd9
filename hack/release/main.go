// Command release writes what make release publishes beside the binaries and images it has built in --dist:
// the packaged charts, kubectl-flotilla's archives with their krew manifest (plugin.yaml) filled in, and
// SHA256SUMS of every file. Every file it writes is dated --source-date-epoch, so the same commit gives the
// same bytes. It is a build tool run by make release, not part of any shipped binary.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"text/template"
	"time"

	"github.com/Masterminds/semver/v3"

	"github.com/flotilla-io/flotilla/charts"
	"github.com/flotilla-io/flotilla/internal/helmchart"
)

//go:embed plugin.yaml
var pluginTemplate string

type options struct {
	dist, version, downloadURL string
	sourceDateEpoch            int64
	arches                     []string
}

func (o *options) validate() error {
	var errs []error
	if o.dist == "" {
		errs = append(errs, errors.New("--dist is required"))
	}
	if o.version == "" {
		errs = append(errs, errors.New("--version is required"))
	}
	if o.sourceDateEpoch < 0 {
		errs = append(errs, fmt.Errorf("--source-date-epoch %d: want seconds since 1970", o.sourceDateEpoch))
	}
	if len(o.arches) == 0 {
		errs = append(errs, errors.New("--arch is required"))
	}
	for _, a := range o.arches {
		if a != "amd64" && a != "arm64" {
			errs = append(errs, fmt.Errorf("--arch %q: want amd64 or arm64", a))
		}
	}
	return errors.Join(errs...)
}

func main() {
	o := options{}
	flag.StringVar(&o.dist, "dist", "", "the release directory, holding the binaries NAME-VERSION-linux-ARCH")
	flag.StringVar(&o.version, "version", "", "the release's version (git describe): binaries, image tags and the charts' appVersion")
	flag.Int64Var(&o.sourceDateEpoch, "source-date-epoch", 0, "the date of every file written, in seconds since 1970 (the commit's)")
	flag.StringVar(&o.downloadURL, "download-url", "https://github.com/flotilla-io/flotilla/releases/download/VERSION",
		"where the release's files are published (VERSION is replaced), for the krew manifest")
	flag.Func("arch", "an architecture built: amd64 or arm64 (repeatable)", func(v string) error {
		o.arches = append(o.arches, v)
		return nil
	})
	flag.Parse()
	if err := run(&o); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(o *options) error {
	if err := o.validate(); err != nil {
		return err
	}
	modTime := time.Unix(o.sourceDateEpoch, 0).UTC()
	chartVersion := ChartVersion(o.version)
	for _, name := range []string{charts.Hub, charts.Agent} {
		if _, err := helmchart.Package(name, chartVersion, o.version, modTime, o.dist); err != nil {
			return fmt.Errorf("chart %s: %w", name, err)
		}
	}
	manifest := krewManifest{Version: "v" + chartVersion}
	for _, arch := range o.arches {
		archive := filepath.Join(o.dist, PluginArchive(o.version, arch))
		binary := filepath.Join(o.dist, Binary("kubectl-flotilla", o.version, arch))
		sum, err := writePluginArchive(archive, binary, modTime)
		if err != nil {
			return err
		}
		manifest.Platforms = append(manifest.Platforms, krewPlatform{Arch: arch, SHA256: sum,
			URI: strings.ReplaceAll(o.downloadURL, "VERSION", o.version) + "/" + filepath.Base(archive)})
	}
	if err := manifest.write(filepath.Join(o.dist, "plugin.yaml")); err != nil {
		return err
	}
	return writeSums(o.dist)
}

// Binary is the name make release gives a binary in dist.
func Binary(name, version, arch string) string {
	return fmt.Sprintf("%s-%s-linux-%s", name, version, arch)
}

// PluginArchive is the name of kubectl-flotilla's archive for krew in dist.
func PluginArchive(version, arch string) string {
	return fmt.Sprintf("kubectl-flotilla-%s-linux-%s.tar.gz", version, arch)
}

// ChartVersion is version as SemVer, which Helm's chart versions and krew's versions must be: git describe's
// v1.2.3 and v1.2.3-4-gabcdef0 lose their v; anything else (a commit without a tag) becomes a pre-release of
// 0.0.0, which sorts before every tagged release.
func ChartVersion(version string) string {
	v := strings.TrimPrefix(version, "v")
	if _, err := semver.StrictNewVersion(v); err == nil {
		return v
	}
	return "0.0.0-dev-" + regexp.MustCompile(`[^0-9A-Za-z-]+`).ReplaceAllString(version, "-")
}

// writePluginArchive writes the archive krew installs from, kubectl-flotilla alone, and returns its SHA-256.
func writePluginArchive(archive, binary string, modTime time.Time) (string, error) {
	data, err := os.ReadFile(binary)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	h := &tar.Header{Name: "kubectl-flotilla", Mode: 0o755, Size: int64(len(data)), ModTime: modTime, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := tw.WriteHeader(h); err != nil {
		return "", err
	}
	if _, err := tw.Write(data); err != nil {
		return "", err
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	sum := sha256.Sum256(buf.Bytes())
	return hex.EncodeToString(sum[:]), os.WriteFile(archive, buf.Bytes(), 0o644)
}

// krewManifest fills plugin.yaml.
type krewManifest struct {
	Version   string
	Platforms []krewPlatform
}

type krewPlatform struct{ Arch, URI, SHA256 string }

func (m krewManifest) write(path string) error {
	t, err := template.New("plugin.yaml").Option("missingkey=error").Parse(pluginTemplate)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, m); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// writeSums writes dist/SHA256SUMS, in sha256sum's format (sha256sum -c SHA256SUMS checks it): every file
// under dist by its path there, in order.
func writeSums(dist string) error {
	var lines []string
	err := filepath.WalkDir(dist, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || path == filepath.Join(dist, "SHA256SUMS") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dist, path)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		lines = append(lines, hex.EncodeToString(sum[:])+"  "+filepath.ToSlash(rel)+"\n")
		return nil
	})
	if err != nil {
		return err
	}
	slices.SortFunc(lines, func(a, b string) int { return strings.Compare(a[66:], b[66:]) })
	return os.WriteFile(filepath.Join(dist, "SHA256SUMS"), []byte(strings.Join(lines, "")), 0o644)
}
