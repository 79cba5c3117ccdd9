// Command image builds Flotilla's OCI images from static binaries without a container daemon: an empty base,
// the binary, CA certificates and a non-root user in one layer, OCI labels naming version, source and
// revision. Each image is written twice under --out-dir: NAME.tar, which docker load accepts, and NAME.oci, an
// OCI layout for skopeo copy or crane push. It is a build tool run by make image, not part of any shipped
// binary.
package main

import (
	"archive/tar"
	"bytes"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// The image's fixed facts, which the image test checks too.
const (
	// UID and GID of the user the binary runs as: not root, and a number, so Kubernetes' runAsNonRoot can
	// verify it without an /etc/passwd lookup.
	UID, GID = 65532, 65532
	// Home is the user's home directory, writable by it: the agent's default data directory is under $HOME.
	Home = "/home/nonroot"
	// CABundle is where Go's crypto/x509 looks first on Linux.
	CABundle = "/etc/ssl/certs/ca-certificates.crt"
)

// BinaryPath is where an image keeps its binary, its entrypoint.
func BinaryPath(name string) string { return "/usr/local/bin/" + name }

// RefName is the reference an image is tagged with in its tarball and OCI layout.
func RefName(name, version string) string { return name + ":" + version }

type options struct {
	outDir, arch, version, source, revision string
	images                                  map[string]string // image name → binary
}

func (o *options) validate() error {
	var errs []error
	if o.outDir == "" {
		errs = append(errs, errors.New("--out-dir is required"))
	}
	if o.arch != "amd64" && o.arch != "arm64" {
		errs = append(errs, fmt.Errorf("--arch %q: want amd64 or arm64", o.arch))
	}
	if _, err := name.NewTag(RefName("flotilla", o.version)); o.version == "" || err != nil {
		errs = append(errs, fmt.Errorf("--version %q: want a valid image tag", o.version))
	}
	if len(o.images) == 0 {
		errs = append(errs, errors.New("--image NAME=BINARY is required"))
	}
	return errors.Join(errs...)
}

func main() {
	o := options{images: map[string]string{}}
	flag.StringVar(&o.outDir, "out-dir", "", "directory the images are written to")
	flag.StringVar(&o.arch, "arch", "amd64", "architecture of the binaries: amd64 or arm64")
	flag.StringVar(&o.version, "version", "", "version: the image tag and org.opencontainers.image.version")
	flag.StringVar(&o.source, "source", "", "org.opencontainers.image.source")
	flag.StringVar(&o.revision, "revision", "", "org.opencontainers.image.revision (a git commit)")
	flag.Func("image", "NAME=BINARY: build image NAME around the static binary BINARY (repeatable)", func(v string) error {
		n, bin, ok := strings.Cut(v, "=")
		if !ok || n == "" || bin == "" {
			return fmt.Errorf("want NAME=BINARY, got %q", v)
		}
		o.images[n] = bin
		return nil
	})
	flag.Parse()
	if err := run(&o); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(o *options) error {
	if err := o.validate(); err != nil {
		return err
	}
	certs, err := caBundle()
	if err != nil {
		return err
	}
	for n, bin := range o.images {
		img, err := build(o, n, bin, certs)
		if err != nil {
			return fmt.Errorf("image %s: %w", n, err)
		}
		if err := write(o, n, img); err != nil {
			return fmt.Errorf("image %s: %w", n, err)
		}
	}
	return nil
}

// caBundle returns the root certificates of Go's x509roots bundle (Mozilla's NSS store) as PEM. Unlike the
// build machine's /etc/ssl/certs it is pinned in go.sum, so every machine builds the same image. Roots that
// NSS trusts only for certificates issued before a date are left out: a PEM bundle cannot carry that limit,
// and trusting them without it would trust more than NSS does.
func caBundle() ([]byte, error) {
	var out bytes.Buffer
	for root := range bundle.Roots() {
		if root.Constraint != nil {
			continue
		}
		if err := pem.Encode(&out, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate}); err != nil {
			return nil, err
		}
	}
	if out.Len() == 0 {
		return nil, errors.New("the x509roots bundle holds no unconstrained root")
	}
	return out.Bytes(), nil
}

// build returns the image of one binary on an empty base.
func build(o *options, n, bin string, certs []byte) (v1.Image, error) {
	binary, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	layerTar, err := rootFS(n, binary, certs)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", o.arch
	cfg.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cfg.Config.Entrypoint = []string{BinaryPath(n)}
	cfg.Config.User = fmt.Sprintf("%d:%d", UID, GID)
	cfg.Config.WorkingDir = Home
	// PATH names the binary's directory, so `kubectl exec POD -- flotilla ...` finds it whatever default PATH
	// the container runtime would give an image without one.
	cfg.Config.Env = []string{"HOME=" + Home, "SSL_CERT_FILE=" + CABundle, "PATH=" + filepath.Dir(BinaryPath(n))}
	cfg.Config.Labels = map[string]string{
		"org.opencontainers.image.title":    n,
		"org.opencontainers.image.version":  o.version,
		"org.opencontainers.image.source":   o.source,
		"org.opencontainers.image.revision": o.revision,
	}
	return mutate.ConfigFile(img, cfg)
}

// rootFS is the image's only layer: the binary, the CA bundle, an /etc/passwd naming the user (for tools
// that look the user up) and the directories the user may write. Times are fixed, so the same inputs build
// the same layer.
func rootFS(n string, binary, certs []byte) ([]byte, error) {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:%s:/sbin/nologin\n", UID, GID, Home)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", GID)
	entries := []struct {
		path     string
		mode     int64
		uid, gid int
		data     []byte
	}{
		{path: "etc/", mode: 0o755},
		{path: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{path: "etc/group", mode: 0o644, data: []byte(group)},
		{path: "etc/ssl/", mode: 0o755},
		{path: "etc/ssl/certs/", mode: 0o755},
		{path: strings.TrimPrefix(CABundle, "/"), mode: 0o644, data: certs},
		{path: "home/", mode: 0o755},
		{path: strings.TrimPrefix(Home, "/") + "/", mode: 0o700, uid: UID, gid: GID},
		{path: "tmp/", mode: 0o1777},
		{path: "usr/", mode: 0o755},
		{path: "usr/local/", mode: 0o755},
		{path: "usr/local/bin/", mode: 0o755},
		{path: strings.TrimPrefix(BinaryPath(n), "/"), mode: 0o755, data: binary},
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.path, Mode: e.mode, Uid: e.uid, Gid: e.gid, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		if strings.HasSuffix(e.path, "/") {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// write stores the image as OUT/NAME.tar (docker load) and OUT/NAME.oci (an OCI layout whose one manifest is
// annotated with the version as its reference name, so skopeo copy oci:OUT/NAME.oci:VERSION finds it),
// replacing earlier builds.
func write(o *options, n string, img v1.Image) error {
	ref := RefName(n, o.version)
	tag, err := name.NewTag(ref)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.outDir, 0o755); err != nil {
		return err
	}
	if err := tarball.WriteToFile(filepath.Join(o.outDir, n+".tar"), tag, img); err != nil {
		return err
	}
	dir := filepath.Join(o.outDir, n+".oci")
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	return p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": o.version}),
		layout.WithPlatform(v1.Platform{OS: "linux", Architecture: o.arch}))
}
