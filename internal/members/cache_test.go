package members

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// fakeMember stands for a cluster's Secret: the token Config finds there, or the error reading it.
type fakeMember struct {
	mu    sync.Mutex
	token string
	err   error
	reads int
}

func (f *fakeMember) config(_ context.Context, cluster *clusterv1alpha1.Cluster) (*rest.Config, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	if f.err != nil {
		return nil, f.err
	}
	return &rest.Config{Host: cluster.Spec.APIEndpoint, BearerToken: f.token}, nil
}

// built is a value of the test cache: what it was built from, and whether it was stopped.
type built struct {
	token   string
	stopped bool
}

func newTestCache(f *fakeMember, clock *time.Time) *Cache[*built] {
	c := NewCache(f.config, func(_ string, cfg *rest.Config) (*built, error) {
		return &built{token: cfg.BearerToken}, nil
	}, func(b *built) { b.stopped = true })
	c.now = func() time.Time { return *clock }
	return c
}

func pushCluster(endpoint string) *clusterv1alpha1.Cluster {
	return &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "m1", UID: "uid-1"},
		Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push, APIEndpoint: endpoint,
			SecretRef: &clusterv1alpha1.LocalSecretReference{Namespace: clusterv1alpha1.SystemNamespace, Name: "cluster-m1"}}}
}

// TestCacheRule: a value is used without reading the Secret until TTL passes; a reread that finds the same
// credentials keeps the value, one that finds new credentials builds a new value and stops the old one; a
// change of the Cluster's credential fields rereads at once; an error is never held, and a value is not used
// past TTL while the reread fails.
func TestCacheRule(t *testing.T) {
	ctx := context.Background()
	clock := time.Unix(1_000_000, 0)
	f := &fakeMember{token: "t1"}
	c := newTestCache(f, &clock)
	cluster := pushCluster("https://m1:6443")
	get := func() *built {
		t.Helper()
		b, err := c.Get(ctx, cluster)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	first := get()
	if first.token != "t1" || f.reads != 1 {
		t.Fatalf("first Get: token %q, %d reads", first.token, f.reads)
	}
	clock = clock.Add(TTL - time.Second)
	f.token = "t2" // rotated, but not read before TTL passes
	if b := get(); b != first || f.reads != 1 {
		t.Fatalf("within TTL: a new value (%v) or a reread (%d reads)", b != first, f.reads)
	}

	clock = clock.Add(time.Second)
	second := get()
	if second == first || second.token != "t2" || !first.stopped || f.reads != 2 {
		t.Fatalf("past TTL with a rotated token: token %q, old stopped %v, %d reads", second.token, first.stopped, f.reads)
	}
	clock = clock.Add(TTL)
	if b := get(); b != second || second.stopped || f.reads != 3 {
		t.Fatalf("past TTL with the same credentials: rebuilt %v, stopped %v, %d reads", b != second, second.stopped, f.reads)
	}

	// A changed endpoint is read at once, before TTL passes.
	cluster = pushCluster("https://m1-new:6443")
	third := get()
	if third == second || !second.stopped || f.reads != 4 {
		t.Fatalf("changed endpoint: rebuilt %v, old stopped %v, %d reads", third != second, second.stopped, f.reads)
	}
	// So is the Cluster recreated under the same name.
	cluster.UID = "uid-2"
	if get(); f.reads != 5 {
		t.Fatalf("recreated Cluster: %d reads, want 5", f.reads)
	}

	// Past TTL, a failing reread is returned every time and the held value is not used.
	clock = clock.Add(TTL)
	f.err = errors.New("secret unreadable")
	for range 2 {
		if b, err := c.Get(ctx, cluster); err == nil || b != nil {
			t.Fatalf("failing reread: %v, %v", b, err)
		}
	}
	if f.reads != 7 {
		t.Fatalf("an error was held: %d reads, want 7", f.reads)
	}
	f.err = nil
	if get(); f.reads != 8 {
		t.Fatalf("after the error: %d reads, want 8", f.reads)
	}
}

// TestCacheDropAndClose: Drop stops one cluster's value and the next Get builds anew; Close stops every
// value and builds none after.
func TestCacheDropAndClose(t *testing.T) {
	ctx := context.Background()
	clock := time.Unix(1_000_000, 0)
	f := &fakeMember{token: "t1"}
	c := newTestCache(f, &clock)
	cluster := pushCluster("https://m1:6443")
	first, err := c.Get(ctx, cluster)
	if err != nil {
		t.Fatal(err)
	}
	c.Drop(cluster.Name)
	if !first.stopped {
		t.Fatal("Drop did not stop the value")
	}
	second, err := c.Get(ctx, cluster)
	if err != nil || second == first {
		t.Fatalf("Get after Drop: rebuilt %v, %v", second != first, err)
	}
	c.Close()
	if !second.stopped {
		t.Fatal("Close did not stop the value")
	}
	if _, err := c.Get(ctx, cluster); err == nil {
		t.Fatal("Get built a value after Close")
	}
}
