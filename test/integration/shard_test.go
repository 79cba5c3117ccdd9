package integration

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheme"
	"github.com/flotilla-io/flotilla/internal/shard"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

const shardTestLabel = "flotilla.io/shard-test"

// severableLeases is the real Lease client of one replica until sever cuts it off the API server: the replica
// then lives on but can neither renew nor read the group, as when partitioned away.
type severableLeases struct {
	coordinationclient.LeaseInterface
	severed atomic.Bool
}

var errSevered = errors.New("cut off from the API server")

func (s *severableLeases) Get(ctx context.Context, name string, o metav1.GetOptions) (*coordinationv1.Lease, error) {
	if s.severed.Load() {
		return nil, errSevered
	}
	return s.LeaseInterface.Get(ctx, name, o)
}

func (s *severableLeases) List(ctx context.Context, o metav1.ListOptions) (*coordinationv1.LeaseList, error) {
	if s.severed.Load() {
		return nil, errSevered
	}
	return s.LeaseInterface.List(ctx, o)
}

func (s *severableLeases) Create(ctx context.Context, l *coordinationv1.Lease, o metav1.CreateOptions) (*coordinationv1.Lease, error) {
	if s.severed.Load() {
		return nil, errSevered
	}
	return s.LeaseInterface.Create(ctx, l, o)
}

func (s *severableLeases) Update(ctx context.Context, l *coordinationv1.Lease, o metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	if s.severed.Load() {
		return nil, errSevered
	}
	return s.LeaseInterface.Update(ctx, l, o)
}

// shardReplica is one hub replica's controller manager with its shard group and a per-cluster controller
// wired as the hub's are (Filter at the source, Owns in Reconcile, Requeue on gains), which records the
// clusters it acted on.
type shardReplica struct {
	group  *shard.Group
	leases *severableLeases
	mu     sync.Mutex
	acted  map[string]time.Time
}

func (r *shardReplica) Reconcile(_ context.Context, req ctrlreconcile.Request) (ctrlreconcile.Result, error) {
	if !r.group.Owns(req.Name) {
		return ctrlreconcile.Result{}, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.acted[req.Name] = time.Now()
	return ctrlreconcile.Result{}, nil
}

func (r *shardReplica) actedOn() map[string]time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.acted)
}

func (r *shardReplica) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.acted = map[string]time.Time{}
}

func startShardReplica(t *testing.T, ctx context.Context, identity string, lease time.Duration) *shardReplica {
	t.Helper()
	leases := &severableLeases{LeaseInterface: env.Kube.CoordinationV1().Leases(clusterv1alpha1.SystemNamespace)}
	group, err := shard.NewGroup(leases, identity, lease)
	if err != nil {
		t.Fatal(err)
	}
	r := &shardReplica{group: group, leases: leases, acted: map[string]time.Time{}}
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: scheme.New(), Metrics: metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0", Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.Add(group); err != nil {
		t.Fatal(err)
	}
	ours := func(o client.Object) (string, bool) { return o.GetName(), o.GetLabels()[shardTestLabel] == "true" }
	err = ctrl.NewControllerManagedBy(mgr).Named("shard-test-"+identity).WithOptions(group.Options(controller.Options{MaxConcurrentReconciles: 4})).
		For(&clusterv1alpha1.Cluster{}, builder.WithPredicates(group.Filter(ours))).
		WatchesRawSource(group.Requeue(shard.OneCluster(func(ctx context.Context) ([]ctrlreconcile.Request, error) {
			clusters := &clusterv1alpha1.ClusterList{}
			if err := mgr.GetClient().List(ctx, clusters, client.MatchingLabels{shardTestLabel: "true"}); err != nil {
				return nil, err
			}
			requests := make([]ctrlreconcile.Request, len(clusters.Items))
			for i, c := range clusters.Items {
				requests[i].Name = c.Name
			}
			return requests, nil
		}, func(r ctrlreconcile.Request) (string, bool) { return r.Name, true }))).
		Complete(r)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("replica %s: %v", identity, err)
		}
	}()
	return r
}

// TestShardGroupDividesAndHandsOver: two hub replicas' controller managers share 200 hollow clusters. Once
// the group settles, every cluster is owned by exactly one replica, and an event on every cluster is acted on
// once, by its owner (none twice, none lost). Then one replica is cut off from the API server: it stops
// acting before the other takes its clusters over, and the other acts on every one of them, with no new
// event, within the lease duration and a renewal.
func TestShardGroupDividesAndHandsOver(t *testing.T) {
	const n, lease = 200, 3 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("shard-%03d", i)
		c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: names[i], Labels: map[string]string{shardTestLabel: "true"}},
			Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Pull, ID: "id-" + names[i]}}
		if err := env.Client.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = env.Client.DeleteAllOf(context.Background(), &clusterv1alpha1.Cluster{}, client.MatchingLabels{shardTestLabel: "true"})
	})
	a := startShardReplica(t, ctx, "replica-a", lease)
	b := startShardReplica(t, ctx, "replica-b", lease)

	both := []string{"replica-a", "replica-b"}
	testenv.Eventually(t, 15*time.Second, "both replicas see both as members", func() error {
		if ma, mb := a.group.Members(), b.group.Members(); !slices.Equal(ma, both) || !slices.Equal(mb, both) {
			return fmt.Errorf("a sees %v, b sees %v", ma, mb)
		}
		return nil
	})
	owned := map[string]int{}
	for _, name := range names {
		switch oa, ob := a.group.Owns(name), b.group.Owns(name); {
		case oa == ob:
			t.Fatalf("%s: owned by a %t, by b %t", name, oa, ob)
		case oa:
			owned["replica-a"]++
		default:
			owned["replica-b"]++
		}
	}
	t.Logf("clusters owned: %v", owned)
	if owned["replica-a"] < n/4 || owned["replica-b"] < n/4 {
		t.Errorf("uneven shares: %v", owned)
	}

	// One event on every cluster: each is acted on by its owner alone.
	a.reset()
	b.reset()
	for _, name := range names {
		patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"annotations":{"shard-test":"poke"}}}`))
		if err := env.Client.Patch(ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}}, patch); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, 15*time.Second, "every poked cluster acted on", func() error {
		if got := len(a.actedOn()) + len(b.actedOn()); got < n {
			return fmt.Errorf("%d of %d acted on", got, n)
		}
		return nil
	})
	actedA, actedB := a.actedOn(), b.actedOn()
	for _, name := range names {
		_, byA := actedA[name]
		_, byB := actedB[name]
		if byA == byB || byA != a.group.Owns(name) {
			t.Fatalf("%s: acted on by a %t, by b %t; a owns it %t", name, byA, byB, a.group.Owns(name))
		}
	}

	// b is cut off: a takes over b's clusters through Requeue, with no event.
	movedFromB := []string{}
	for _, name := range names {
		if b.group.Owns(name) {
			movedFromB = append(movedFromB, name)
		}
	}
	a.reset()
	severed := time.Now()
	b.leases.severed.Store(true)
	testenv.Eventually(t, 3*lease, "a acts on every cluster of b", func() error {
		acted := a.actedOn()
		for _, name := range movedFromB {
			if _, ok := acted[name]; !ok {
				return fmt.Errorf("%s not acted on by a yet (%d of %d moved)", name, len(acted), len(movedFromB))
			}
		}
		return nil
	})
	acted := a.actedOn()
	var first, last time.Time
	for _, name := range movedFromB {
		if at := acted[name]; first.IsZero() || at.Before(first) {
			first = at
		}
		if at := acted[name]; at.After(last) {
			last = at
		}
	}
	t.Logf("%d clusters moved: a acted on the first %s and the last %s after b was cut off", len(movedFromB),
		first.Sub(severed).Round(10*time.Millisecond), last.Sub(severed).Round(10*time.Millisecond))
	if d := last.Sub(severed); d > lease+lease/3+time.Second {
		t.Errorf("takeover took %s, more than the lease duration %s and a renewal (and a second to act)", d, lease)
	}
	if slices.Contains(b.group.Members(), "replica-b") {
		t.Errorf("b, cut off, still counts itself a member after a took its clusters over")
	}
	for _, name := range names {
		if b.group.Owns(name) {
			t.Fatalf("b, cut off, still owns %s", name)
		}
		if !a.group.Owns(name) {
			t.Fatalf("a, alone, does not own %s", name)
		}
	}
}
