package integration

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/security"
	"github.com/chromedp/chromedp"
	"k8s.io/client-go/rest"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	proxyv1alpha1 "github.com/flotilla-io/flotilla/api/proxy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/members"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// rogueMemberPage is what a member admin may put behind the hub's proxy: a page whose script, run in a
// person's browser, tries to read the hub with that person's credentials.
const rogueMemberPage = `<!doctype html><title>loaded</title>
<script>
fetch("/api/v1/namespaces", {credentials: "include"})
  .then(r => r.text()).then(t => { document.title = "read " + t.length + " bytes of the hub"; })
  .catch(() => { document.title = "blocked"; });
</script>`

// TestProxiedPagesCannotReadTheHub: what a member serves through clusters/NAME/proxy runs in a sandbox of
// its own origin, so a page's script reads nothing of the hub in a real browser; every proxied answer says
// so in its headers, and a browser page of another site cannot open an upgraded session (exec, attach,
// port-forward) through the hub.
func TestProxiedPagesCannotReadTheHub(t *testing.T) {
	ctx := context.Background()
	// A push member whose API server is the member admin's own: it answers the hub's identity check and
	// serves the page.
	rogue := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/namespaces/kube-system":
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "kube-system", "uid": "rogue-id"}})
		case "/page":
			w.Header().Set("Content-Type", "text/html")
			_, _ = io.WriteString(w, rogueMemberPage)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(rogue.Close)
	pushCluster(t, "rogue", map[string][]byte{members.SecretKeyToken: []byte("member-token")}, func(s *clusterv1alpha1.ClusterSpec) {
		s.APIEndpoint, s.InsecureSkipTLSVerification, s.ID = rogue.URL, true, "rogue-id"
	})
	waitForProxyAPI(t)
	transport, err := rest.TransportFor(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	page := env.Config.Host + proxyv1alpha1.ClusterProxyPath("rogue") + "/page"

	t.Run("proxied answers carry a sandbox and nosniff", func(t *testing.T) {
		testenv.Eventually(t, 30*time.Second, "the rogue member's page through the proxy", func() error {
			resp, err := (&http.Client{Transport: transport}).Get(page)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK {
				return &httpError{resp.StatusCode, string(body)}
			}
			if csp, sniff := resp.Header.Values("Content-Security-Policy"), resp.Header.Get("X-Content-Type-Options"); !strings.Contains(strings.Join(csp, ";"), "sandbox") || sniff != "nosniff" {
				t.Fatalf("headers of a proxied page: CSP %q, X-Content-Type-Options %q", csp, sniff)
			}
			return nil
		})
	})

	t.Run("a cross-site upgrade request is refused", func(t *testing.T) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, env.Config.Host+proxyv1alpha1.ClusterProxyPath("rogue")+"/api/v1/namespaces/default/pods/p/exec?command=sh", nil)
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "websocket")
		req.Header.Set("Origin", "https://elsewhere.example")
		resp, err := transport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "another site") {
			t.Fatalf("a cross-site upgrade: %d %s", resp.StatusCode, body)
		}
	})

	t.Run("in a browser, the page's script reads nothing of the hub", func(t *testing.T) {
		browser := testenv.Browser(t)
		// The person's credentials go with every request the browser makes, as a client certificate would.
		if _, err := chromedp.Call(browser, security.SetIgnoreCertificateErrors, security.SetIgnoreCertificateErrorsParams{Ignore: true}); err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Call(browser, network.Enable, network.EnableParams{}); err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Call(browser, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Authorization": "Bearer " + memberToken(t)}}); err != nil {
			t.Fatal(err)
		}
		if err := chromedp.Do(browser, chromedp.Navigate(page)); err != nil {
			t.Fatal(err)
		}
		// The page loaded (its title is there); its script had two seconds to read the hub.
		time.Sleep(2 * time.Second)
		title, err := chromedp.Run(browser, chromedp.Title())
		if err != nil {
			t.Fatal(err)
		}
		if title != "loaded" && title != "blocked" {
			t.Fatalf("the member's page, served through the hub, read the hub: title %q", title)
		}
	})
}
