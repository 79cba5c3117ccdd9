package helmchart

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"time"

	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
)

// Package writes the embedded chart name as `helm package --version VERSION --app-version APPVERSION` would,
// into outDir as NAME-VERSION.tgz, and returns its path. Every file in the archive is dated modTime (Helm
// dates them with the time of packaging), so the same chart and versions give the same bytes.
func Package(name, version, appVersion string, modTime time.Time, outDir string) (string, error) {
	c, err := Load(name)
	if err != nil {
		return "", err
	}
	c.Metadata.Version, c.Metadata.AppVersion = version, appVersion
	tmp, err := os.MkdirTemp("", "flotilla-chart-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	saved, err := chartutil.Save(c, tmp)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", err
	}
	out := filepath.Join(outDir, filepath.Base(saved))
	return out, redate(saved, out, modTime)
}

// redate copies the gzipped tar archive src to dst with every entry dated modTime, keeping the gzip header
// (Helm's comment and extra field) and everything else.
func redate(src, dst string, modTime time.Time) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	zr, err := gzip.NewReader(in)
	if err != nil {
		return err
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	zw := gzip.NewWriter(out)
	zw.Header = zr.Header
	zw.Header.ModTime = time.Time{}
	tr, tw := tar.NewReader(zr), tar.NewWriter(zw)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return err
		}
		h.ModTime, h.AccessTime, h.ChangeTime = modTime, time.Time{}, time.Time{}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}
