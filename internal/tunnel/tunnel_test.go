package tunnel

import (
	"context"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/rest"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	proxyv1alpha1 "github.com/flotilla-io/flotilla/api/proxy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/registration"
)

// seen records what the fake member API server received.
type seen struct {
	mu                       sync.Mutex
	path, auth, impersonated string
}

// TestTunnel runs both ends of a tunnel over real connections: the hub reaches the member's API server only,
// with the agent's credential and the hub's Impersonate-User header, and the agent dials again after the
// hub drops the tunnel.
func TestTunnel(t *testing.T) {
	got := &seen{}
	member := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.mu.Lock()
		got.path, got.auth, got.impersonated = r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("Impersonate-User")
		got.mu.Unlock()
		io.WriteString(w, "member")
	}))
	defer member.Close()
	memberConfig := &rest.Config{Host: member.URL, BearerToken: "agent-token",
		TLSClientConfig: rest.TLSClientConfig{CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: member.Certificate().Raw})}}
	memberProxy, err := MemberProxy(memberConfig)
	if err != nil {
		t.Fatal(err)
	}

	agentUser := &user.DefaultInfo{Name: registration.AgentUser("m1", "0123456789abcdef"), Groups: []string{registration.AgentGroup}}
	cluster := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "m1", UID: "uid-1",
		Annotations: map[string]string{clusterv1alpha1.AnnotationAgentUser: agentUser.Name}}, Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Pull}}
	var grantMu sync.Mutex
	grant := GrantFor(agentUser, cluster)
	registry := NewRegistry()
	var mu sync.Mutex
	var changes []bool
	registry.Notify(func(string) {
		mu.Lock()
		changes = append(changes, registry.Connected("m1"))
		mu.Unlock()
	})
	hub := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != proxyv1alpha1.ClusterAttachPath("m1") {
			http.NotFound(w, r)
			return
		}
		grantMu.Lock()
		g := grant
		grantMu.Unlock()
		if err := registry.Serve(w, r, "m1", g); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
		}
	}))
	defer hub.Close()
	hubConfig := &rest.Config{Host: hub.URL,
		TLSClientConfig: rest.TLSClientConfig{CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hub.Certificate().Raw})}}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	agent := &Agent{Cluster: "m1", HubConfig: func() (*rest.Config, error) { return hubConfig, nil }, Member: memberProxy}
	go agent.Run(ctx)
	waitFor(t, func() bool { return registry.Connected("m1") })

	target := "http://m1.tunnel.invalid"
	rt := &http.Transport{DialContext: registry.DialContext("m1")}
	get := func(t *testing.T, url string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("Impersonate-User", "alice")
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if body, _ := io.ReadAll(resp.Body); string(body) != "member" || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s through the tunnel: %s %q", url, resp.Status, body)
		}
		got.mu.Lock()
		defer got.mu.Unlock()
		if got.path != "/api/v1/pods" || got.auth != "Bearer agent-token" || got.impersonated != "alice" {
			t.Fatalf("the member got path %q, Authorization %q, Impersonate-User %q", got.path, got.auth, got.impersonated)
		}
	}
	t.Run("reaches the member's API server as the agent, impersonating", func(t *testing.T) {
		get(t, target+"/api/v1/pods")
	})
	t.Run("another address still reaches only the member's API server", func(t *testing.T) {
		get(t, "http://"+hub.Listener.Addr().String()+"/api/v1/pods")
		get(t, "http://169.254.169.254/api/v1/pods")
	})
	t.Run("another cluster has no tunnel", func(t *testing.T) {
		rt2 := &http.Transport{DialContext: registry.DialContext("m2")}
		req, _ := http.NewRequest(http.MethodGet, "http://m2/api/v1/pods", nil)
		if _, err := rt2.RoundTrip(req); err == nil {
			t.Fatal("a cluster without a tunnel was reached")
		}
	})
	t.Run("the agent dials again when the hub drops the tunnel", func(t *testing.T) {
		registry.Close()
		waitFor(t, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(changes) >= 3 && changes[len(changes)-1]
		})
		mu.Lock()
		if changes[0] != true || changes[1] != false {
			t.Errorf("tunnel changes %v: want open, closed, open", changes)
		}
		mu.Unlock()
		get(t, target+"/api/v1/pods")
	})
	t.Run("a tunnel stands only for the registration and Cluster it was opened for", func(t *testing.T) {
		if !registry.Usable("m1", cluster) {
			t.Fatal("the tunnel does not stand for its own Cluster")
		}
		reregistered := cluster.DeepCopy()
		reregistered.Annotations[clusterv1alpha1.AnnotationAgentUser] = registration.AgentUser("m1", "fedcba9876543210")
		recreated := cluster.DeepCopy()
		recreated.UID = "uid-2"
		pushed := cluster.DeepCopy()
		pushed.Spec.SyncMode = clusterv1alpha1.Push
		for name, c := range map[string]*clusterv1alpha1.Cluster{"another agent": reregistered, "another Cluster of the name": recreated, "a push cluster": pushed, "no Cluster": nil} {
			waitFor(t, func() bool { return registry.Connected("m1") })
			if registry.Usable("m1", c) {
				t.Fatalf("%s: the tunnel is still usable", name)
			}
			if registry.Usable("m1", cluster) {
				t.Fatalf("%s: the refused tunnel was not closed", name)
			}
		}
	})
	t.Run("a tunnel closes when the agent's certificate expires", func(t *testing.T) {
		grantMu.Lock()
		grant.Expires = time.Now().Add(-time.Second)
		grantMu.Unlock()
		registry.Close()
		if registry.Usable("m1", cluster) {
			t.Fatal("a tunnel of an expired certificate is usable")
		}
	})
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 15*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatal("condition not met in 15 s")
	}
}
