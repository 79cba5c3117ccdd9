package existingcluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/hub"
	"github.com/flotilla-io/flotilla/internal/shard"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// TestShardedHubsShareTheClusters: two `flotilla hub --kubeconfig --shard` processes on one cluster. Clusters
// the non-leader owns get their Ready condition, so the health monitor runs there too, for its share; after
// the non-leader is killed (its Lease left behind), clusters created since, its share among them, get theirs
// from the survivor within the lease duration: none is lost.
//
// Works too: a template placed on every cluster gets one Work per cluster, each created by the replica that
// owns its cluster and by no other (each process's flotilla_works_written_total counts exactly its share).
// After the kill, the survivor creates the Works of the new clusters, the dead replica's share among them,
// and, when the template changes, rewrites every Work once: none written twice, none lost.
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
			c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{shardedLabel: "true"}},
				Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Pull, ID: "id-" + name}}
			if err := env.Client.Create(ctx, c); err != nil {
				t.Fatal(err)
			}
			// What registration would make, and an agent report: the cluster's namespace, and that it serves
			// ClusterRoles, which the test places there.
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.ClusterNamespace(name)}}
			if err := env.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatal(err)
			}
			patch := client.MergeFrom(c.DeepCopy())
			c.Status.APIEnablements = []clusterv1alpha1.APIEnablement{{GroupVersion: rbacv1.SchemeGroupVersion.String(),
				Resources: []clusterv1alpha1.APIResource{{Name: "clusterroles", Kind: "ClusterRole"}}}}
			if err := env.Client.Status().Patch(ctx, c, patch); err != nil {
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
			_ = env.Client.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.ClusterNamespace(name)}})
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

	// A ClusterRole placed on every cluster of the test: one Work each, created by the cluster's owner.
	leaderProcess := p1
	if followerProcess == p1 {
		leaderProcess = p2
	}
	leaderBefore, followerBefore := worksWritten(t, leaderProcess), worksWritten(t, followerProcess)
	role := placeEverywhere(t, "round-1")
	hasWorks := func(names []string, content string) func() error {
		return func() error { return worksOf(t, role, names, content) }
	}
	testenv.Eventually(t, time.Minute, "a Work on every cluster", hasWorks(first, "round-1"))
	leaderShare, followerShare := worksWritten(t, leaderProcess).since(leaderBefore), worksWritten(t, followerProcess).since(followerBefore)
	if want := len(first) - ofFollower; leaderShare.create != want {
		t.Errorf("the leader created %d Works, want %d (its share of %d clusters)", leaderShare.create, want, len(first))
	}
	if followerShare.create != ofFollower {
		t.Errorf("the follower created %d Works, want %d (its share of %d clusters)", followerShare.create, ofFollower, len(first))
	}
	// The detector claims the template meanwhile, which renders the Works again: once that settled, a change
	// of the template is written to each Work by the cluster's owner. (A replica may write one of its Works
	// twice when two renders race; the extra writes are logged.)
	leaderBefore, followerBefore = settled(t, leaderProcess), settled(t, followerProcess)
	change(t, role, "round-2")
	testenv.Eventually(t, time.Minute, "every Work carries the changed template", hasWorks(first, "round-2"))
	leaderShare, followerShare = worksWritten(t, leaderProcess).since(leaderBefore), worksWritten(t, followerProcess).since(followerBefore)
	if leaderShare.create != 0 || followerShare.create != 0 || leaderShare.update < len(first)-ofFollower || followerShare.update < ofFollower {
		t.Errorf("for a change of the template the leader wrote %+v and the follower %+v, want no create and an update of each Work, %d by the leader and %d by the follower",
			leaderShare, followerShare, len(first)-ofFollower, ofFollower)
	}
	t.Logf("a change of the template: %d updates by the leader for %d Works, %d by the follower for %d", leaderShare.update, len(first)-ofFollower, followerShare.update, ofFollower)

	leaderBefore = worksWritten(t, leaderProcess)
	followerProcess.Kill()
	killed := time.Now()
	// The admission webhook the API server calls may be the killed process's (the last to start writes it):
	// the survivor takes the configuration over once that URL stops answering.
	testenv.Eventually(t, 30*time.Second, "the admission webhook served by the survivor", func() error {
		probe := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "sharded-probe"},
			Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Pull, ID: "id-sharded-probe"}}
		return env.Client.Create(ctx, probe, client.DryRunAll)
	})
	second := create("b", 40)
	createdAt := time.Now()
	testenv.Eventually(t, 4*lease+10*time.Second, "clusters created after the follower died judged by the leader", judged(second))
	judgedAt := time.Now()
	all := append(slices.Clone(first), second...)
	testenv.Eventually(t, 4*lease+10*time.Second, "a Work on every new cluster, the follower's share too", hasWorks(all, "round-2"))
	t.Logf("%d of 40 clusters were the follower's; 40 created in the %s after it was killed were all judged %s after the last, and had their Works %s after the last",
		ofFollower, createdAt.Sub(killed).Round(100*time.Millisecond), judgedAt.Sub(createdAt).Round(100*time.Millisecond), time.Since(createdAt).Round(100*time.Millisecond))

	// The template changes again: the survivor rewrites every Work, the dead replica's share too, once.
	change(t, role, "round-3")
	testenv.Eventually(t, time.Minute, "every Work carries the changed template", hasWorks(all, "round-3"))
	got := worksWritten(t, leaderProcess).since(leaderBefore)
	if got.create != len(second) || got.update < len(all) {
		t.Errorf("after the follower died the leader wrote %+v, want a create per new cluster (%d) and an update of each Work (%d)", got, len(second), len(all))
	}
	t.Logf("after the follower died: %d creates and %d updates by the leader for %d Works", got.create, got.update, len(all))
}

// change makes the role's rule name content.
func change(t *testing.T, role *rbacv1.ClusterRole, content string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(role), role); err != nil {
			return err
		}
		role.Rules[0].ResourceNames = []string{content}
		return env.Client.Update(context.Background(), role)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// settled waits until hub process p's count of Works written has not moved for 3 s, and returns it.
func settled(t *testing.T, p *testenv.Process) written {
	t.Helper()
	last, since := worksWritten(t, p), time.Now()
	testenv.Eventually(t, time.Minute, "the Works settled", func() error {
		if now := worksWritten(t, p); now != last {
			last, since = now, time.Now()
		}
		if time.Since(since) < 3*time.Second {
			return errors.New("Works written within 3 s")
		}
		return nil
	})
	return last
}

// shardedLabel marks the Clusters of TestShardedHubsShareTheClusters, where placeEverywhere places.
const shardedLabel = "sharded-hubs-test"

// placeEverywhere creates a ClusterRole whose rule names content and places it on every Cluster labelled
// shardedLabel, tolerating their taints (nothing heartbeats for them).
func placeEverywhere(t *testing.T, content string) *rbacv1.ClusterRole {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "sharded-hubs-test"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}, ResourceNames: []string{content}}}}
	policy := &policyv1alpha1.ClusterPropagationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "sharded-hubs-test"},
		Spec: policyv1alpha1.PropagationSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: role.Name}},
			Placement: policyv1alpha1.Placement{
				ClusterAffinity:    &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{shardedLabel: "true"}}},
				ClusterTolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			}}}
	for _, o := range []client.Object{policy, role} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), o) })
	}
	return role
}

// worksOf checks that the role's binding has exactly one Work on each cluster named, carrying content.
func worksOf(t *testing.T, role *rbacv1.ClusterRole, clusters []string, content string) error {
	t.Helper()
	binding := workv1alpha1.BindingName(schema.GroupKind{Group: rbacv1.GroupName, Kind: "ClusterRole"}, role.Name)
	works := &workv1alpha1.WorkList{}
	if err := env.Client.List(context.Background(), works, client.MatchingLabels{workv1alpha1.LabelBindingNamespace: "", workv1alpha1.LabelBindingName: binding}); err != nil {
		return err
	}
	byCluster := map[string]*workv1alpha1.Work{}
	for i := range works.Items {
		if cluster, ok := clusterv1alpha1.ClusterOfNamespace(works.Items[i].Namespace); ok {
			byCluster[cluster] = &works.Items[i]
		}
	}
	for _, c := range clusters {
		w := byCluster[c]
		if w == nil {
			b := &workv1alpha1.ClusterResourceBinding{}
			if err := env.Client.Get(context.Background(), client.ObjectKey{Name: binding}, b); err != nil {
				return fmt.Errorf("no Work on %s yet, binding %s: %w", c, binding, err)
			}
			return fmt.Errorf("no Work on %s yet (%d of %d); binding placed on %d clusters, conditions %v", c, len(byCluster), len(clusters),
				len(b.Spec.Clusters), b.Status.Conditions)
		}
		if len(w.Spec.Workload.Manifests) != 1 || !strings.Contains(string(w.Spec.Workload.Manifests[0].Raw), content) {
			return fmt.Errorf("the Work on %s does not carry %s yet", c, content)
		}
	}
	return nil
}

// written is what one hub process's binding controller wrote, from flotilla_works_written_total.
type written struct{ create, update int }

func (w written) since(before written) written {
	return written{create: w.create - before.create, update: w.update - before.update}
}

// worksWritten scrapes flotilla_works_written_total from hub process p, at the address it printed.
func worksWritten(t *testing.T, p *testenv.Process) written {
	t.Helper()
	m := regexp.MustCompile(`metrics at (http://\S+)/metrics`).FindStringSubmatch(p.Output())
	if m == nil {
		t.Fatalf("the hub did not print where it serves its metrics:\n%s", p.Output())
	}
	code, body := httpGet(m[1] + "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	var w written
	for _, line := range strings.Split(body, "\n") {
		for op, n := range map[string]*int{"create": &w.create, "update": &w.update} {
			if v, ok := strings.CutPrefix(line, `flotilla_works_written_total{operation="`+op+`"} `); ok {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					t.Fatalf("/metrics: %q: %v", line, err)
				}
				*n = int(f)
			}
		}
	}
	return w
}
