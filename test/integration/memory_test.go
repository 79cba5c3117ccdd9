package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/internal/hub"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// TestControllerCacheKeepsNoManagedFields: the cache the hub's controllers share holds objects without their
// managedFields, while the API server keeps them.
func TestControllerCacheKeepsNoManagedFields(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	createNamespace(t, "cache-strip")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "cache-strip", Name: "settings"}, Data: map[string]string{"a": "b"}}
	if err := env.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if len(cm.ManagedFields) == 0 {
		t.Fatal("the API server recorded no managedFields: nothing to strip, the test proves nothing")
	}

	c, err := cache.New(env.Config, hub.CacheOptions())
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	cached := &corev1.ConfigMap{}
	testenv.Eventually(t, 30*time.Second, "the ConfigMap in the cache", func() error {
		return c.Get(ctx, client.ObjectKeyFromObject(cm), cached)
	})
	if len(cached.ManagedFields) != 0 {
		t.Fatalf("the cache holds %d managedFields entries", len(cached.ManagedFields))
	}
}

// TestLeasesAreNotWatchCached: the hub's API server keeps no watch cache of Leases, which agents renew every
// 10 s, but does of other kinds.
func TestLeasesAreNotWatchCached(t *testing.T) {
	ctx := context.Background()
	// A watch of each kind makes sure a cacher, if there is one, has started and reports.
	for _, list := range []func() error{
		func() error {
			_, err := env.Kube.CoordinationV1().Leases("").List(ctx, metav1.ListOptions{})
			return err
		},
		func() error { _, err := env.Kube.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{}); return err },
	} {
		if err := list(); err != nil {
			t.Fatal(err)
		}
	}
	metrics, err := env.Kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cached := map[string]bool{}
	for _, line := range strings.Split(string(metrics), "\n") {
		if !strings.HasPrefix(line, "apiserver_watch_cache_initializations_total{") {
			continue
		}
		for _, r := range []string{"leases", "configmaps"} {
			if strings.Contains(line, `resource="`+r+`"`) || strings.Contains(line, `resource="`+r+`.`) {
				cached[r] = true
			}
		}
	}
	if !cached["configmaps"] {
		t.Fatal("no watch cache of ConfigMaps in the metrics: the test cannot tell")
	}
	if cached["leases"] {
		t.Fatal("the API server keeps a watch cache of Leases")
	}
}
