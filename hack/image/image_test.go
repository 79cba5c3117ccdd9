package main

import (
	"archive/tar"
	"crypto/x509"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// TestImages reads back the images make image wrote to $FLOTILLA_IMAGES, both as docker-loadable tarball and
// as OCI layout, and checks what a cluster relies on: the entrypoint, a non-root numeric user, the platform,
// the OCI labels, a CA bundle, and a static binary that runs version. $FLOTILLA_IMAGE_NAMES names the images
// (default: both), $FLOTILLA_IMAGE_ARCH their architecture (default amd64).
func TestImages(t *testing.T) {
	dir, version, arch := os.Getenv("FLOTILLA_IMAGES"), os.Getenv("FLOTILLA_IMAGE_VERSION"), os.Getenv("FLOTILLA_IMAGE_ARCH")
	if arch == "" {
		arch = "amd64"
	}
	if dir == "" {
		t.Skip("FLOTILLA_IMAGES is not set: make test-image builds the images and runs this test")
	}
	names := strings.Fields(os.Getenv("FLOTILLA_IMAGE_NAMES"))
	if len(names) == 0 {
		names = []string{"flotilla", "flotilla-agent"}
	}
	for _, n := range names {
		t.Run(n, func(t *testing.T) {
			tag, err := name.NewTag(RefName(n, version))
			if err != nil {
				t.Fatal(err)
			}
			fromTar, err := tarball.ImageFromPath(filepath.Join(dir, n+".tar"), &tag)
			if err != nil {
				t.Fatal(err)
			}
			fromLayout, err := layoutImage(filepath.Join(dir, n+".oci"), version)
			if err != nil {
				t.Fatal(err)
			}
			for _, img := range []v1.Image{fromTar, fromLayout} {
				checkConfig(t, img, n, version, arch)
			}
			checkFiles(t, fromLayout, n, version, arch)
		})
	}
}

// layoutImage returns the image of the OCI layout at dir whose reference name is ref.
func layoutImage(dir, ref string) (v1.Image, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, err
	}
	index, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	manifest, err := index.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, d := range manifest.Manifests {
		if d.Annotations["org.opencontainers.image.ref.name"] == ref {
			return index.Image(d.Digest)
		}
	}
	return nil, fmt.Errorf("%s holds no image named %q", dir, ref)
}

func checkConfig(t *testing.T, img v1.Image, n, version, arch string) {
	t.Helper()
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(cfg.Config.Entrypoint, " "), BinaryPath(n); got != want {
		t.Errorf("entrypoint %q, want %q", got, want)
	}
	if got, want := cfg.Config.User, fmt.Sprintf("%d:%d", UID, GID); got != want || strings.HasPrefix(got, "0") {
		t.Errorf("user %q, want %q: numeric and not root", got, want)
	}
	if !slices.Contains(cfg.Config.Env, "PATH=/usr/local/bin") {
		t.Errorf("environment %v has no PATH=/usr/local/bin: kubectl exec POD -- %s would not find the binary", cfg.Config.Env, n)
	}
	if cfg.OS != "linux" || cfg.Architecture != arch {
		t.Errorf("platform %s/%s, want linux/%s", cfg.OS, cfg.Architecture, arch)
	}
	for _, label := range []string{"version", "source", "revision"} {
		key := "org.opencontainers.image." + label
		if cfg.Config.Labels[key] == "" {
			t.Errorf("label %s is missing: %v", key, cfg.Config.Labels)
		}
	}
	if got := cfg.Config.Labels["org.opencontainers.image.version"]; got != version {
		t.Errorf("label org.opencontainers.image.version %q, want %q", got, version)
	}
	if layers, err := img.Layers(); err != nil || len(layers) != 1 {
		t.Errorf("%d layers (%v), want 1 on an empty base", len(layers), err)
	}
}

// checkFiles extracts the image's files and runs the binary's version command from them, on a machine that
// can run the image's platform.
func checkFiles(t *testing.T, img v1.Image, n, version, arch string) {
	t.Helper()
	root := t.TempDir()
	if err := extract(img, root); err != nil {
		t.Fatal(err)
	}
	certs, err := os.ReadFile(filepath.Join(root, CABundle))
	if err != nil {
		t.Fatal(err)
	}
	if pool := x509.NewCertPool(); !pool.AppendCertsFromPEM(certs) {
		t.Errorf("%s holds no certificate", CABundle)
	}
	binary := filepath.Join(root, BinaryPath(n))
	if runtime.GOOS != "linux" || runtime.GOARCH != arch {
		t.Skipf("cannot run a linux/%s binary on %s/%s", arch, runtime.GOOS, runtime.GOARCH)
	}
	// An empty environment and working directory stand in for the image's: no libc, no loader, nothing from
	// the build machine.
	cmd := exec.Command(binary, "version")
	cmd.Env, cmd.Dir = []string{}, root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s version: %v: %s", n, err, out)
	}
	if want := n + " " + version + " "; !strings.HasPrefix(string(out), want) {
		t.Errorf("%s version printed %q, want it to start with %q", n, out, want)
	}
	if interp, err := elfInterpreter(binary); err != nil || interp != "" {
		t.Errorf("the binary is not static (interpreter %q, %v): the image has no libc", interp, err)
	}
}

// extract writes the image's flattened file system under root.
func extract(img v1.Image, root string) error {
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		target := filepath.Join(root, filepath.Clean("/"+h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(target, 0o755)
		case tar.TypeReg:
			err = writeFile(target, tr, os.FileMode(h.Mode).Perm())
		}
		if err != nil {
			return err
		}
	}
}

func writeFile(path string, r io.Reader, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// elfInterpreter returns the dynamic loader an ELF binary asks for, "" for a static binary.
func elfInterpreter(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			data, err := io.ReadAll(p.Open())
			return strings.TrimRight(string(data), "\x00"), err
		}
	}
	return "", nil
}
