package helmrelease

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"helm.sh/helm/v4/pkg/registry"
	"oras.land/oras-go/v2/registry/remote/auth"
)

// IsOCI says whether repo is an OCI registry (oci://host[:port]/path) rather than an HTTP(S) chart repository.
func IsOCI(repo string) bool { return registry.IsOCI(repo) }

// noCredentialsFile is where Helm's registry client is told its credentials are: a path that does not exist,
// so that it reads no registry login of the hub's user. (Its authorizer has no credential function either:
// every pull is anonymous; the client only ever sends the anonymous bearer tokens registries hand out.)
var noCredentialsFile = filepath.Join(os.TempDir(), "flotilla-anonymous-registry", "none", "config.json")

// fetchOCI pulls chart at version from the OCI registry repo with Helm's registry client, as `helm pull
// oci://REPO/CHART --version VERSION` does (a '+' in the version is a '_' in the tag): anonymously, over HTTPS
// only (the client's plain-HTTP option is never set, and redirects to http:// are refused), within FetchTimeout
// for the whole pull, refusing a manifest or layer larger than MaxChartBytes before fetching it. The registry's
// digests are checked as the content arrives (the manifest against the Docker-Content-Digest the registry
// sends, each layer against the manifest's digest and size), and the chart layer once more here.
func (f *Fetcher) fetchOCI(ctx context.Context, repo, chart, version string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, FetchTimeout)
	defer cancel()
	ref := strings.TrimSuffix(strings.TrimPrefix(repo, "oci://"), "/") + "/" + chart + ":" + strings.ReplaceAll(version, "+", "_")
	hc := &http.Client{Transport: &boundTransport{ctx: ctx, next: f.roundTripper()}, CheckRedirect: httpsRedirectsOnly}
	client, err := registry.NewClient(
		registry.ClientOptHTTPClient(hc),
		registry.ClientOptAuthorizer(auth.Client{Client: hc, Cache: auth.NewCache()}),
		registry.ClientOptCredentialsFile(noCredentialsFile),
	)
	if err != nil {
		return nil, err
	}
	pulled, err := client.Generic().PullGeneric(ref, registry.GenericPullOptions{
		AllowedMediaTypes: []string{ocispec.MediaTypeImageManifest, registry.ConfigMediaType, registry.ChartLayerMediaType, registry.LegacyChartLayerMediaType},
		PreCopy: func(_ context.Context, desc ocispec.Descriptor) error {
			if desc.Size > MaxChartBytes {
				return fmt.Errorf("%s %s is %d bytes, more than %d", desc.MediaType, desc.Digest, desc.Size, MaxChartBytes)
			}
			return nil
		},
	})
	if err != nil {
		return nil, fmt.Errorf("pull oci://%s: %w", ref, err)
	}
	for _, desc := range pulled.Descriptors {
		if desc.MediaType != registry.ChartLayerMediaType && desc.MediaType != registry.LegacyChartLayerMediaType {
			continue
		}
		data, err := client.Generic().GetDescriptorData(pulled.MemoryStore, desc)
		if err != nil {
			return nil, fmt.Errorf("pull oci://%s: %w", ref, err)
		}
		if sum := fmt.Sprintf("sha256:%x", sha256.Sum256(data)); desc.Digest.String() != sum {
			return nil, fmt.Errorf("pull oci://%s: chart layer digest %s, the manifest says %s", ref, sum, desc.Digest)
		}
		return data, nil
	}
	return nil, fmt.Errorf("pull oci://%s: the manifest has no Helm chart layer (%s)", ref, registry.ChartLayerMediaType)
}

// roundTripper is the round tripper of the Fetcher's HTTP client; when it has none, the transport that
// refuses the addresses a chart must not come from (transport), as for HTTP repositories.
func (f *Fetcher) roundTripper() http.RoundTripper {
	if f.HTTP != nil && f.HTTP.Transport != nil {
		return f.HTTP.Transport
	}
	return transport(f.AllowLoopback)
}

// httpsRedirectsOnly follows a registry's redirects (blobs are often served from object storage) only to
// https:// URLs, so that a registry cannot send the hub to a plain-HTTP address.
func httpsRedirectsOnly(req *http.Request, via []*http.Request) error {
	if req.URL.Scheme != "https" {
		return fmt.Errorf("redirect to %s refused: registries are reached over HTTPS only", req.URL)
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

// boundTransport puts every request of one pull under that pull's context (Helm's registry client takes
// none: its requests would otherwise run without a deadline), refuses any request that is not HTTPS, and
// cuts any response body at MaxChartBytes, whatever the registry claims its length is.
type boundTransport struct {
	ctx  context.Context
	next http.RoundTripper
}

func (t *boundTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "https" {
		return nil, fmt.Errorf("%s refused: registries are reached over HTTPS only", req.URL.Redacted())
	}
	ctx, cancel := context.WithCancel(req.Context())
	stop := context.AfterFunc(t.ctx, cancel)
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		stop()
		cancel()
		return nil, err
	}
	resp.Body = &boundBody{r: resp.Body, left: MaxChartBytes, done: func() { stop(); cancel() }}
	return resp, nil
}

// boundBody errors once more than left bytes are read.
type boundBody struct {
	r    io.ReadCloser
	left int64
	done func()
}

func (b *boundBody) Read(p []byte) (int, error) {
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, fmt.Errorf("response larger than %d bytes", MaxChartBytes)
	}
	return n, err
}

func (b *boundBody) Close() error {
	err := b.r.Close()
	b.done()
	return err
}
