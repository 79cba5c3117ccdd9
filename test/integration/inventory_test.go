package integration

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	inventoryv1alpha1 "github.com/flotilla-io/flotilla/api/inventory/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/clusterstatus"
	"github.com/flotilla-io/flotilla/internal/registration"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// heartbeat renews a cluster's Lease every second, as its agent would, until the test ends, and returns the
// count of renewals made.
func heartbeat(t *testing.T, name string) *atomic.Int64 {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: clusterv1alpha1.ClusterNamespace(name), Name: name}}
	if err := env.Client.Create(ctx, lease); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	renewer := &clusterstatus.LeaseRenewer{Hub: env.Client, Cluster: name, Holder: registration.AgentUser(name, "test")}
	var renewals atomic.Int64
	var done sync.WaitGroup
	done.Go(func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			if renewer.Renew(ctx) == nil {
				renewals.Add(1)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	})
	t.Cleanup(func() { cancel(); done.Wait() })
	return &renewals
}

// waitProfile waits until the ClusterProfile ns/name exists and check accepts it, and returns it.
func waitProfile(t *testing.T, ns, name string, check func(*inventoryv1alpha1.ClusterProfile) error) *inventoryv1alpha1.ClusterProfile {
	t.Helper()
	p := &inventoryv1alpha1.ClusterProfile{}
	testenv.Eventually(t, hangGuard, fmt.Sprintf("ClusterProfile %s/%s", ns, name), func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
			return err
		}
		return check(p)
	})
	return p
}

// healthy checks a profile's ControlPlaneHealthy condition.
func healthy(status metav1.ConditionStatus, reason string) func(*inventoryv1alpha1.ClusterProfile) error {
	return func(p *inventoryv1alpha1.ClusterProfile) error {
		c := meta.FindStatusCondition(p.Status.Conditions, inventoryv1alpha1.ConditionControlPlaneHealthy)
		if c == nil || c.Status != status || c.Reason != reason {
			return fmt.Errorf("ControlPlaneHealthy %+v, want %s %s", c, status, reason)
		}
		return nil
	}
}

// property is the value of a profile's property name ("" when it has none).
func property(p *inventoryv1alpha1.ClusterProfile, name string) string {
	for _, pr := range p.Status.Properties {
		if pr.Name == name {
			return pr.Value
		}
	}
	return ""
}

// TestClusterProfilesFollowTheirClusters: the hub publishes one ClusterProfile per Cluster in the namespace
// of its exclusive set (the default set's for a Cluster without the label), labelled for consumers; the
// profile says when the cluster turns unhealthy, moves namespace when the cluster changes sets, is not
// rewritten by heartbeats or by status the profile does not carry, leaves another cluster manager's profile
// alone, and goes with its Cluster.
func TestClusterProfilesFollowTheirClusters(t *testing.T) {
	ctx := context.Background()
	placeableCluster(t, "inv-a", nil)
	placeableCluster(t, "inv-b", map[string]string{clusterv1alpha1.LabelClusterSet: "inv-prod"})
	b := &clusterv1alpha1.Cluster{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "inv-b"}, b); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(b.DeepCopy())
	b.Spec.Region, b.Spec.Zones, b.Spec.Provider = "eu-west-1", []string{"eu-west-1a", "eu-west-1b"}, "kind"
	if err := env.Client.Patch(ctx, b, patch); err != nil {
		t.Fatal(err)
	}
	renewals := heartbeat(t, "inv-b")

	prod := inventoryv1alpha1.ClusterSetNamespace("inv-prod")
	waitProfile(t, inventoryv1alpha1.ClusterSetNamespace(clusterv1alpha1.ClusterSetDefault), "inv-a", func(p *inventoryv1alpha1.ClusterProfile) error {
		if property(p, inventoryv1alpha1.PropertyClusterSet) != "default" || p.Labels[inventoryv1alpha1.LabelClusterManager] != "flotilla" {
			return fmt.Errorf("labels %v, properties %+v", p.Labels, p.Status.Properties)
		}
		return nil
	})
	profile := waitProfile(t, prod, "inv-b", func(p *inventoryv1alpha1.ClusterProfile) error {
		if err := healthy(metav1.ConditionTrue, clusterstatus.ReasonReady)(p); err != nil {
			return err
		}
		want := map[string]string{"clusterset.k8s.io": "inv-prod", "topology.kubernetes.io/region": "eu-west-1",
			"topology.kubernetes.io/zone": "eu-west-1a,eu-west-1b", "cluster.flotilla.io/provider": "kind"}
		for name, v := range want {
			if property(p, name) != v {
				return fmt.Errorf("properties %+v, want %v", p.Status.Properties, want)
			}
		}
		return nil
	})
	if profile.Spec.ClusterManager.Name != "flotilla" || profile.Status.Version.Kubernetes != "v1.37.1" ||
		profile.Labels["x-k8s.io/cluster-manager"] != "flotilla" || profile.Labels["clusterset.multicluster.x-k8s.io"] != "inv-prod" ||
		profile.Labels[clusterv1alpha1.LabelClusterSet] != "inv-prod" {
		t.Errorf("profile labels %v, spec %+v, version %+v", profile.Labels, profile.Spec, profile.Status.Version)
	}
	if j := meta.FindStatusCondition(profile.Status.Conditions, inventoryv1alpha1.ConditionJoined); j == nil || j.Status != metav1.ConditionTrue {
		t.Errorf("Joined %+v, want True", j)
	}
	ns := &corev1.Namespace{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: prod}, ns); err != nil || ns.Labels["clusterset.multicluster.x-k8s.io"] != "inv-prod" {
		t.Errorf("namespace %s: labels %v, %v; want the KEP's set label", prod, ns.Labels, err)
	}

	// Heartbeats, and status the profile does not carry, write nothing. A published change of another
	// Cluster, made after them, comes through the same watch: once the publisher has taken it in and has
	// nothing left to do, it has seen them too.
	before := profile.ResourceVersion
	since := reconciles(t, "inventory")
	from := renewals.Load()
	testenv.Eventually(t, hangGuard, "three heartbeats", func() error {
		if n := renewals.Load() - from; n < 3 {
			return fmt.Errorf("%d heartbeats", n)
		}
		return nil
	})
	updateClusterStatus(t, "inv-b", func(s *clusterv1alpha1.ClusterStatus) {
		s.NodeSummary.ReadyNum, s.AgentVersion = 2, "v0.2.0"
	})
	a := &clusterv1alpha1.Cluster{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "inv-a"}, a); err != nil {
		t.Fatal(err)
	}
	patch = client.MergeFrom(a.DeepCopy())
	a.Spec.Region = "flushed"
	if err := env.Client.Patch(ctx, a, patch); err != nil {
		t.Fatal(err)
	}
	waitReconciled(t, "inventory", since, 1)
	waitProfile(t, inventoryv1alpha1.ClusterSetNamespace("default"), "inv-a", func(p *inventoryv1alpha1.ClusterProfile) error {
		if r := property(p, inventoryv1alpha1.PropertyRegion); r != "flushed" {
			return fmt.Errorf("region %q", r)
		}
		return nil
	})
	if after := waitProfile(t, prod, "inv-b", func(*inventoryv1alpha1.ClusterProfile) error { return nil }); after.ResourceVersion != before {
		t.Errorf("heartbeats rewrote the profile: resourceVersion %s → %s", before, after.ResourceVersion)
	}

	// The member's readyz fails: the hub's Ready turns False, and so does ControlPlaneHealthy.
	updateClusterStatus(t, "inv-b", func(s *clusterv1alpha1.ClusterStatus) { s.Health.Readyz = "[-]etcd failed" })
	waitProfile(t, prod, "inv-b", healthy(metav1.ConditionFalse, clusterstatus.ReasonNotReady))

	// Another exclusive set: the profile moves to its namespace and leaves the old one.
	labelCluster(t, "inv-b", map[string]string{clusterv1alpha1.LabelClusterSet: "inv-dev"})
	waitProfile(t, inventoryv1alpha1.ClusterSetNamespace("inv-dev"), "inv-b", func(p *inventoryv1alpha1.ClusterProfile) error {
		if s := property(p, inventoryv1alpha1.PropertyClusterSet); s != "inv-dev" {
			return fmt.Errorf("set %q", s)
		}
		return healthy(metav1.ConditionFalse, clusterstatus.ReasonNotReady)(p)
	})
	testenv.EventuallyGone(t, env.Client, &inventoryv1alpha1.ClusterProfile{ObjectMeta: metav1.ObjectMeta{Namespace: prod, Name: "inv-b"}}, hangGuard)

	// A profile of that name another cluster manager published stays its own.
	foreign := &inventoryv1alpha1.ClusterProfile{
		ObjectMeta: metav1.ObjectMeta{Namespace: inventoryv1alpha1.ClusterSetNamespace("default"), Name: "inv-c",
			Labels: map[string]string{inventoryv1alpha1.LabelClusterManager: "other"}},
		Spec: inventoryv1alpha1.ClusterProfileSpec{ClusterManager: inventoryv1alpha1.ClusterManager{Name: "other"}},
	}
	create(t, foreign)
	since = reconciles(t, "inventory")
	placeableCluster(t, "inv-c", nil)
	waitReconciled(t, "inventory", since, 1)
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(foreign), foreign); err != nil {
		t.Fatal(err)
	}
	if foreign.Spec.ClusterManager.Name != "other" || foreign.Labels[inventoryv1alpha1.LabelClusterManager] != "other" || len(foreign.OwnerReferences) > 0 {
		t.Errorf("the publisher took another manager's profile: labels %v, spec %+v, owners %v", foreign.Labels, foreign.Spec, foreign.OwnerReferences)
	}

	// The Cluster goes, and its profile with it.
	if err := env.Client.Delete(ctx, a); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyGone(t, env.Client, &inventoryv1alpha1.ClusterProfile{ObjectMeta: metav1.ObjectMeta{
		Namespace: inventoryv1alpha1.ClusterSetNamespace("default"), Name: "inv-a"}}, hangGuard)
}
