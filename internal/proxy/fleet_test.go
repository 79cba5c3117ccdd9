package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	proxyv1alpha1 "github.com/flotilla-io/flotilla/api/proxy/v1alpha1"
)

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

func TestBudget(t *testing.T) {
	var b budget
	for i := range fleetListsPerUser {
		if err := b.take("alice"); err != nil {
			t.Fatalf("alice's list %d: %v", i+1, err)
		}
	}
	if err := b.take("alice"); !apierrors.IsTooManyRequests(err) {
		t.Fatalf("alice's list %d: %v, want 429", fleetListsPerUser+1, err)
	}
	if err := b.take("bob"); err != nil {
		t.Fatalf("bob is not held back by alice's lists: %v", err)
	}
	b.release("alice")
	if err := b.take("alice"); err != nil {
		t.Fatalf("after one of alice's lists ended: %v", err)
	}
	for i := 0; b.total < fleetListsAtOnce; i++ {
		if err := b.take(fmt.Sprintf("user-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.take("carol"); !apierrors.IsTooManyRequests(err) {
		t.Fatalf("list %d of the hub: %v, want 429", fleetListsAtOnce+1, err)
	}
}

// memberBackend sends every cluster to one test server.
type memberBackend struct{ url *url.URL }

func (m memberBackend) For(context.Context, *clusterv1alpha1.Cluster) (*Target, error) {
	return &Target{URL: m.url, Transport: http.DefaultTransport}, nil
}

// TestFleetListReadsBounded: a member's answer over maxMemberListBytes is that cluster's error, saying how
// to narrow the list, not held in memory; limit is passed on and a member's continue token shows as
// truncated.
func TestFleetListReadsBounded(t *testing.T) {
	huge := false
	member := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if huge {
			_, _ = io.WriteString(w, `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"`)
			_, _ = w.Write(bytes.Repeat([]byte("x"), maxMemberListBytes))
			_, _ = io.WriteString(w, `"}}]}`)
			return
		}
		if r.URL.Query().Get("limit") != "1" {
			t.Errorf("limit was not passed on: %s", r.URL.RawQuery)
		}
		_, _ = io.WriteString(w, `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"continue":"more"},"items":[{"metadata":{"name":"a"}}]}`)
	}))
	defer member.Close()
	u, _ := url.Parse(member.URL)
	l := &fleetLister{fleetREST: &fleetREST{backends: memberBackend{u}}, caller: &user.DefaultInfo{Name: "alice"}, memberPath: "/api/v1/configmaps"}
	cluster := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "m1"}}

	list, err := l.get(context.Background(), cluster, "limit=1")
	if err != nil || len(list.items) != 1 || !list.truncated {
		t.Fatalf("a limited list: %d items, truncated %v, %v", len(list.items), list.truncated, err)
	}
	huge = true
	_, err = l.get(context.Background(), cluster, "")
	if err == nil || !strings.Contains(err.Error(), "narrow the selector") {
		t.Fatalf("an answer over %d bytes: %v", maxMemberListBytes, err)
	}
}

func TestListStream(t *testing.T) {
	var out bytes.Buffer
	s := &listStream{w: &out}
	s.raw(`{"items":[`)
	s.item(map[string]any{"a": 1})
	s.item(map[string]any{"b": 2})
	s.raw(`],"clusters":`)
	s.value([]proxyv1alpha1.FleetListCluster{{Name: "m1", Items: 2}})
	s.raw("}")
	var got proxyv1alpha1.FleetList
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || len(got.Items) != 2 || len(got.Clusters) != 1 {
		t.Fatalf("%s: %v", out.String(), err)
	}
}
