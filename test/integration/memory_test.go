package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/hub"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// TestControllerCacheKeepsNoManagedFields: the cache the hub's controllers share holds objects without their
// managedFields, while the API server keeps them.
func TestControllerCacheKeepsNoManagedFields(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	createNamespace(t, "cache-strip")
	// A Secret: of ConfigMaps the cache holds only the hub's cluster-set mode record.
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "cache-strip", Name: "settings"}, StringData: map[string]string{"a": "b"}}
	if err := env.Client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if len(secret.ManagedFields) == 0 {
		t.Fatal("the API server recorded no managedFields: nothing to strip, the test proves nothing")
	}

	c, err := cache.New(env.Config, hub.CacheOptions())
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	cached := &corev1.Secret{}
	testenv.Eventually(t, 30*time.Second, "the Secret in the cache", func() error {
		return c.Get(ctx, client.ObjectKeyFromObject(secret), cached)
	})
	if len(cached.ManagedFields) != 0 {
		t.Fatalf("the cache holds %d managedFields entries", len(cached.ManagedFields))
	}
}

// TestWatchCachedKinds: the hub's API server keeps no watch cache of Leases, which agents renew every 10 s,
// nor of Clusters and bindings, which only the controllers' cache watches, but does of other kinds, Works
// above all: every agent watches its own.
func TestWatchCachedKinds(t *testing.T) {
	ctx := context.Background()
	// A list of each kind makes sure a cacher, if there is one, has started and reports.
	for _, list := range []client.ObjectList{&coordinationv1.LeaseList{}, &corev1.ConfigMapList{}, &clusterv1alpha1.ClusterList{},
		&workv1alpha1.ResourceBindingList{}, &workv1alpha1.ClusterResourceBindingList{}, &workv1alpha1.WorkList{}} {
		if err := env.Client.List(ctx, list); err != nil {
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
		for _, r := range []string{"leases", "configmaps", "clusters", "resourcebindings", "clusterresourcebindings", "works"} {
			if strings.Contains(line, `resource="`+r+`"`) || strings.Contains(line, `resource="`+r+`.`) {
				cached[r] = true
			}
		}
	}
	for _, r := range []string{"configmaps", "works"} {
		if !cached[r] {
			t.Fatalf("no watch cache of %s in the metrics: the test cannot tell", r)
		}
	}
	for _, r := range []string{"leases", "clusters", "resourcebindings", "clusterresourcebindings"} {
		if cached[r] {
			t.Errorf("the API server keeps a watch cache of %s", r)
		}
	}
}
