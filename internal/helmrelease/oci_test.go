package helmrelease

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/flotilla-io/flotilla/internal/helmrelease/helmreleasetest"
)

// TestFetchOCI: charts pulled from an OCI registry served by the test (HTTPS, anonymous) with Helm's registry
// client, once per repo, chart and version; what the registry serves must match its manifest's digests, a
// layer larger than MaxChartBytes is refused before it is fetched, and a missing chart or tag says so.
func TestFetchOCI(t *testing.T) {
	reg := helmreleasetest.NewRegistry(t)
	archive := helmreleasetest.Package(t, demo("1.0.0+build.1"))
	good := reg.Add("demo", "1.0.0+build.1", archive)
	pushed := helmreleasetest.Package(t, helmreleasetest.Chart{Name: "tampered", Version: "1.0.0"})
	tampered := reg.Add("tampered", "1.0.0", pushed)
	// Served in its place: as many bytes (the size in the manifest and the Content-Length agree), one changed.
	changed := bytes.Clone(pushed)
	changed[len(changed)/2] ^= 0xff
	reg.Serve(tampered, changed)
	big := reg.Add("big", "1.0.0", make([]byte, MaxChartBytes+1))

	tests := []struct {
		name, chart, version string
		want                 []byte
		err                  string
		// blob is a layer and gets how many times the pull fetches it.
		blob string
		gets int
	}{
		{name: "pulled, '+' as '_' in the tag", chart: "demo", version: "1.0.0+build.1", want: archive, blob: good, gets: 1},
		{name: "cached", chart: "demo", version: "1.0.0+build.1", want: archive, blob: good, gets: 1},
		{name: "digest mismatch refused", chart: "tampered", version: "1.0.0", err: "digest", blob: tampered, gets: 1},
		{name: "larger than MaxChartBytes refused unfetched", chart: "big", version: "1.0.0", err: "more than 10485760", blob: big, gets: 0},
		{name: "no such version", chart: "demo", version: "9.9.9", err: "not found"},
		{name: "no such chart", chart: "nothing", version: "1.0.0", err: "not found"},
	}
	f := &Fetcher{HTTP: reg.Client}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := f.Fetch(context.Background(), reg.URL, tc.chart, tc.version)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
			} else if err != nil {
				t.Fatal(err)
			} else if !bytes.Equal(got, tc.want) {
				t.Fatalf("got %d bytes, not the archive pushed (%d bytes)", len(got), len(tc.want))
			}
			if tc.blob != "" && reg.Gets(tc.blob) != tc.gets {
				t.Errorf("layer fetched %d times, want %d", reg.Gets(tc.blob), tc.gets)
			}
		})
	}
}

// TestFetchOCIRefusesPlainHTTP: a registry that speaks plain HTTP is never sent a request in plain HTTP
// (loopback allowed, so that the scheme, not the address, is what refuses it).
func TestFetchOCIRefusesPlainHTTP(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { requests.Add(1) }))
	t.Cleanup(srv.Close)
	repo := "oci://" + strings.TrimPrefix(srv.URL, "http://") + "/charts"
	if _, err := (&Fetcher{AllowLoopback: true}).Fetch(context.Background(), repo, "demo", "1.0.0"); err == nil {
		t.Fatal("pulled from a plain-HTTP registry")
	}
	if n := requests.Load(); n != 0 {
		t.Fatalf("the plain-HTTP registry served %d requests", n)
	}
}
