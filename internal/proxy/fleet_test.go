package proxy

import "testing"

func TestCollectionPath(t *testing.T) {
	for _, c := range []struct {
		path, want string
	}{
		{"/api/v1/pods", "/api/v1/pods"},
		{"api/v1/namespaces/web/pods", "/api/v1/namespaces/web/pods"},
		{"/api/v1/namespaces", "/api/v1/namespaces"},
		{"/apis/apps/v1/deployments", "/apis/apps/v1/deployments"},
		{"/apis/apps/v1/namespaces/web/deployments/", "/apis/apps/v1/namespaces/web/deployments"},
		// Not collections: refused.
		{"/api/v1/namespaces/web", ""},
		{"/api/v1/namespaces/web/pods/p1", ""},
		{"/apis/apps/v1/namespaces/web/deployments/d/status", ""},
		{"/apis/apps/v1/namespaces/../deployments", ""},
		{"/api/v1//pods", ""},
		{"/api/./v1/pods", ""},
		{"/api/v1", ""},
		{"/healthz", ""},
		{"", ""},
		{"/apis/apps/v1/foo/web/deployments", ""},
	} {
		got, err := collectionPath(c.path)
		if c.want == "" && err == nil {
			t.Errorf("%q: accepted as %q, want refused", c.path, got)
		}
		if c.want != "" && (err != nil || got != c.want) {
			t.Errorf("%q: %q, %v; want %q", c.path, got, err, c.want)
		}
	}
}
