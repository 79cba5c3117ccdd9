package proxy

import (
	"net/http"
	"reflect"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"

	proxyv1alpha1 "github.com/flotilla-io/flotilla/api/proxy/v1alpha1"
)

func TestImpersonating(t *testing.T) {
	caller := &user.DefaultInfo{Name: "alice", UID: "u-1", Groups: []string{"team-a", "system:authenticated"},
		Extra: map[string][]string{"example.org/Key with space": {"v"}}}
	tests := []struct {
		name    string
		headers http.Header
		refused bool
		want    http.Header
	}{{
		name:    "the caller's credentials and the front proxy's identity headers stay behind",
		headers: http.Header{"Authorization": {"Bearer hub-token"}, "X-Remote-User": {"alice"}, "X-Remote-Group": {"team-a"}, "Accept": {"application/json"}},
		want: http.Header{
			"Accept":           {"application/json"},
			"Impersonate-User": {"alice"}, "Impersonate-Uid": {"u-1"}, "Impersonate-Group": {"team-a", "system:authenticated"},
			"Impersonate-Extra-Example.org%2fkey%20with%20space": {"v"},
		},
	}, {
		name:    "a caller-chosen user is refused",
		headers: http.Header{"Impersonate-User": {"system:admin"}},
		refused: true,
	}, {
		name:    "a caller-chosen extra is refused",
		headers: http.Header{"impersonate-extra-scopes": {"all"}},
		refused: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, "https://hub/apis/proxy.flotilla.io/v1alpha1/clusters/m1/proxy/api", nil)
			req.Header = tt.headers
			out, err := impersonating(req, impersonation(caller, nil))
			if tt.refused {
				if !apierrors.IsForbidden(err) {
					t.Fatalf("want Forbidden, got %v (%v)", err, out)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(out.Header, tt.want) {
				t.Fatalf("headers\n got %v\nwant %v", out.Header, tt.want)
			}
		})
	}
}

func TestProxyRequestsAreLongRunning(t *testing.T) {
	tests := []struct {
		info *request.RequestInfo
		want bool
	}{
		{&request.RequestInfo{IsResourceRequest: true, Verb: "get", Resource: "clusters", Name: "m1", Subresource: "proxy"}, true},
		{&request.RequestInfo{IsResourceRequest: true, Verb: "create", Resource: "clusters", Name: "m1", Subresource: "proxy"}, true},
		{&request.RequestInfo{IsResourceRequest: true, Verb: "get", Resource: "clusters", Name: "m1", Subresource: proxyv1alpha1.SubresourceAttach}, true},
		{&request.RequestInfo{IsResourceRequest: true, Verb: "watch", Resource: "clusters"}, true},
		{&request.RequestInfo{IsResourceRequest: true, Verb: "get", Resource: "clusters", Name: "m1"}, false},
		{&request.RequestInfo{IsResourceRequest: true, Verb: "list", Resource: "clusters"}, false},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(http.MethodGet, "https://hub/", nil)
		if got := longRunning(req, tt.info); got != tt.want {
			t.Errorf("%s %s/%s: long-running %v, want %v", tt.info.Verb, tt.info.Resource, tt.info.Subresource, got, tt.want)
		}
	}
}

func TestCrossSite(t *testing.T) {
	for _, c := range []struct {
		origin, host string
		want         bool
	}{
		{"", "hub:6443", false}, // kubectl and other clients send no Origin
		{"https://hub:6443", "hub:6443", false},
		{"https://HUB:6443", "hub:6443", false},
		{"https://evil.example", "hub:6443", true},
		{"https://hub:6444", "hub:6443", true}, // the dashboard's origin is another one
		{"http://hub:6443", "hub:6443", true},
		{"null", "hub:6443", true}, // a sandboxed page
	} {
		req := &http.Request{Host: c.host, Header: http.Header{}}
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		if got := crossSite(req); got != c.want {
			t.Errorf("Origin %q to %s: cross-site %v, want %v", c.origin, c.host, got, c.want)
		}
	}
}

// TestImpersonationSystemGroups: members see a hub user's system:* groups only when the hub passes them on;
// system:authenticated always.
func TestImpersonationSystemGroups(t *testing.T) {
	admin := &user.DefaultInfo{Name: "admin", Groups: []string{"system:masters", "system:authenticated"}}
	sa := &user.DefaultInfo{Name: "system:serviceaccount:web:ci", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:web", "system:authenticated", "ci"}}
	for _, c := range []struct {
		caller user.Info
		pass   []string
		want   []string
	}{
		{admin, nil, []string{"system:authenticated"}},
		{admin, []string{"system:masters"}, []string{"system:masters", "system:authenticated"}},
		{sa, []string{"system:masters"}, []string{"system:authenticated", "ci"}},
	} {
		if got := impersonation(c.caller, c.pass).Groups; !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s passing %v: groups %v, want %v", c.caller.GetName(), c.pass, got, c.want)
		}
	}
}
