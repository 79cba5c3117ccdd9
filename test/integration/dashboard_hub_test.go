package integration

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/hub"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// TestDashboardInTheHub: the hub serves the dashboard on a port of its own, never on the API's origin, to
// whoever its API server authenticates and the dashboard's role is granted to (not every authenticated
// user), reading as that person: a service account that may read one namespace sees that namespace's
// workloads, is refused another's, and gets live changes of its own; nobody unauthenticated gets in, and no
// page is kept in a cache.
func TestDashboardInTheHub(t *testing.T) {
	ctx := context.Background()
	for _, ns := range []string{"hub-team", "hub-other"} {
		createNamespace(t, ns)
		create(t, configMap(ns, "settings", nil))
		create(t, tolerantPolicy(ns, "settings", []string{"hub-nowhere"}))
	}
	create(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "hub-team", Name: "bob"}})
	grantNamespaceReader(t, "hub-team", "bob", rbacv1.ServiceAccountKind)
	token, err := env.Kube.CoreV1().ServiceAccounts("hub-team").CreateToken(ctx, "bob", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(env.Config.CAData)
	httpClient := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	dashboardURL, err := url.Parse(env.DashboardURL)
	if err != nil || dashboardURL.Host == "" {
		t.Fatalf("the hub serves no dashboard: %q", env.DashboardURL)
	}
	apiURL, _ := url.Parse(env.Config.Host)
	if dashboardURL.Host == apiURL.Host {
		t.Fatalf("the dashboard is served on the API's origin %s", apiURL.Host)
	}
	get := func(path, bearer string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+dashboardURL.Host+path, nil)
		if err != nil {
			return nil, err
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		return httpClient.Do(req)
	}
	page := func(path, bearer string) (int, string) {
		t.Helper()
		resp, err := get(path, bearer)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	// Bob is authenticated, but in none of the fleet's user groups: the dashboard is not his to open.
	if code, _ := page("/dashboard/workloads?namespace=hub-team", token.Status.Token); code != http.StatusForbidden {
		t.Fatalf("bob, whom the dashboard is not granted to, got %d", code)
	}
	create(t, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "dashboard-bob"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: hub.DashboardRole},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "hub-team", Name: "bob"}}})
	testenv.Eventually(t, hangGuard, "bob sees hub-team's workload", func() error {
		code, body := page("/dashboard/workloads?namespace=hub-team", token.Status.Token)
		if code != http.StatusOK || !strings.Contains(body, `data-workload="hub-team/settings"`) {
			return &httpError{code, body}
		}
		return nil
	})
	// A workload's page reads its events as bob, by impersonation (with his token's extras).
	create(t, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "hub-team", Name: "probe-for-bob"},
		InvolvedObject: corev1.ObjectReference{Kind: "ResourceBinding", Namespace: "hub-team", Name: "settings-configmap"},
		Reason:         "ProbeForBob", Message: "read by impersonation", Type: corev1.EventTypeNormal, LastTimestamp: metav1.Now()})
	if code, body := page("/dashboard/workloads/hub-team/settings-configmap", token.Status.Token); code != http.StatusOK || !strings.Contains(body, "ProbeForBob") {
		t.Fatalf("bob's workload page (%d) shows no event read as bob:\n%s", code, body)
	}
	if code, body := page("/dashboard/workloads?namespace=hub-other", token.Status.Token); code != http.StatusForbidden || strings.Contains(body, "hub-other/settings") {
		t.Fatalf("bob reading hub-other: %d\n%s", code, body)
	}
	if code, _ := page("/dashboard/workloads", ""); code != http.StatusUnauthorized && code != http.StatusForbidden {
		t.Fatalf("an unauthenticated request got %d", code)
	}
	if err := env.Kube.Discovery().RESTClient().Get().AbsPath("/dashboard/").Do(ctx).Error(); !apierrors.IsNotFound(err) {
		t.Fatalf("GET /dashboard/ on the hub API's origin: %v, want 404", err)
	}

	// A change in bob's namespace reaches his open stream.
	resp, err := get("/dashboard/events", token.Status.Token)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("event stream: %v %v", err, resp)
	}
	defer resp.Body.Close()
	pageResp, err := get("/dashboard/", token.Status.Token)
	if err != nil {
		t.Fatal(err)
	}
	_ = pageResp.Body.Close()
	if cc := pageResp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("a page carries Cache-Control %q, want no-store", cc)
	}
	got := make(chan string, 1)
	go func() {
		lines := bufio.NewScanner(resp.Body)
		for lines.Scan() {
			if strings.HasPrefix(lines.Text(), "event: change") {
				got <- lines.Text()
				return
			}
		}
	}()
	testenv.Eventually(t, hangGuard, "a change event for bob", func() error {
		b := &workv1alpha1.ResourceBinding{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "hub-team", Name: "settings-configmap"}, b); err != nil {
			return err
		}
		patch := client.MergeFrom(b.DeepCopy())
		b.Annotations = map[string]string{"touched": metav1.Now().String()}
		if err := env.Client.Patch(ctx, b, patch); err != nil {
			return err
		}
		select {
		case <-got:
			return nil
		default:
			return errNoEventYet
		}
	})
}

// expectNoDashboard: a hub started with --dashboard=false answers the dashboard's path as any unknown one
// (404, to an administrator) and has not granted it to anyone.
func expectNoDashboard(t *testing.T, h *testenv.Env) {
	t.Helper()
	ctx := context.Background()
	err := h.Kube.Discovery().RESTClient().Get().AbsPath("/dashboard/").Do(ctx).Error()
	if !apierrors.IsNotFound(err) {
		t.Fatalf("GET /dashboard/ on a hub without the dashboard: %v, want 404", err)
	}
	err = h.Client.Get(ctx, client.ObjectKey{Name: hub.DashboardRole}, &rbacv1.ClusterRole{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("ClusterRole %s on a hub without the dashboard: %v, want none", hub.DashboardRole, err)
	}
}

type httpError struct {
	code int
	body string
}

func (e *httpError) Error() string { return http.StatusText(e.code) + ": " + e.body }

var errNoEventYet = &httpError{0, "no change event yet"}
