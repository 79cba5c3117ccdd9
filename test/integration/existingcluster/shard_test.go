package existingcluster

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/hub"
	"github.com/flotilla-io/flotilla/internal/shard"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// TestShardedHubsShareTheClusters: two `flotilla hub --kubeconfig --shard` processes on one cluster. Clusters
// the non-leader owns get their Ready condition, so the health monitor runs there too, for its share; after
// the non-leader is killed (its Lease left behind), clusters created since, its share among them, get theirs
// from the survivor within the lease duration: none is lost.
func TestShardedHubsShareTheClusters(t *testing.T) {
	const lease = 3 * time.Second
	ctx := context.Background()
	identity := regexp.MustCompile(`controllers elect their leader as (\S+)`)
	start := func(name string) (*testenv.Process, string) {
		p := testenv.StartProcess(t, name, "hub", "--kubeconfig", env.Kubeconfig, "--shard", "--shard-lease-duration", lease.String())
		var id string
		testenv.Eventually(t, 2*time.Minute, name+" ready", func() error {
			if p.Exited() {
				t.Fatalf("%s exited:\n%s", name, p.Output())
			}
			m := identity.FindStringSubmatch(p.Output())
			if m == nil || !strings.Contains(p.Output(), "hub ready on the cluster of") {
				return errors.New("not ready yet")
			}
			id = m[1]
			return nil
		})
		return p, id
	}
	p1, id1 := start("hub-shard-1")
	p2, id2 := start("hub-shard-2")
	members := []string{id1, id2}
	var leader string
	testenv.Eventually(t, time.Minute, "one hub leads", func() error {
		l, err := env.Kube.CoordinationV1().Leases(clusterv1alpha1.SystemNamespace).Get(ctx, hub.LeaderLease, metav1.GetOptions{})
		if err != nil {
			return err
		}
		leader = ptr.Deref(l.Spec.HolderIdentity, "")
		if leader != id1 && leader != id2 {
			return fmt.Errorf("leader %q is neither hub", leader)
		}
		return nil
	})
	follower, followerProcess := id2, p2
	if leader == id2 {
		follower, followerProcess = id1, p1
	}

	var created []string
	create := func(round string, n int) []string {
		var names []string
		for i := range n {
			name := fmt.Sprintf("sharded-%s-%02d", round, i)
			c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Pull, ID: "id-" + name}}
			if err := env.Client.Create(ctx, c); err != nil {
				t.Fatal(err)
			}
			names = append(names, name)
			created = append(created, name)
		}
		return names
	}
	t.Cleanup(func() {
		for _, name := range created {
			_ = env.Client.Delete(context.Background(), &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}})
		}
	})
	judged := func(names []string) func() error {
		return func() error {
			for _, name := range names {
				c := &clusterv1alpha1.Cluster{}
				if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, c); err != nil {
					return err
				}
				if meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ClusterConditionReady) == nil {
					return fmt.Errorf("%s (owner %s) has no Ready condition yet", name, shard.Owner(name, members))
				}
			}
			return nil
		}
	}
	first := create("a", 40)
	ofFollower := 0
	for _, name := range first {
		if shard.Owner(name, members) == follower {
			ofFollower++
		}
	}
	if ofFollower == 0 {
		t.Fatal("the hash gave the follower none of 40 clusters")
	}
	testenv.Eventually(t, time.Minute, "every cluster judged, the follower's share too", judged(first))

	followerProcess.Kill()
	killed := time.Now()
	second := create("b", 40)
	createdAt := time.Now()
	testenv.Eventually(t, 4*lease+10*time.Second, "clusters created after the follower died judged by the leader", judged(second))
	t.Logf("%d of 40 clusters were the follower's; 40 created in the %s after it was killed were all judged %s after the last",
		ofFollower, createdAt.Sub(killed).Round(100*time.Millisecond), time.Since(createdAt).Round(100*time.Millisecond))
}
