package shard

import (
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller"
)

func memberLease(holder, version string) coordinationv1.Lease {
	return coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: leaseName(holder), ResourceVersion: version},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder)}}
}

// TestMembership follows one replica's view through a join, a peer's expiry and its own failure to renew:
// it counts itself in only after two renewals, counts a peer out a lease duration after last seeing its Lease
// change, and counts itself out before a peer could count it out.
func TestMembership(t *testing.T) {
	const d = 15 * time.Second // renewals every 5s
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g := &Group{identity: "a", duration: d, seen: map[string]sighting{}}
	step := func(at time.Duration, renewedOK bool, leases ...coordinationv1.Lease) []string {
		now := t0.Add(at)
		if renewedOK {
			if g.joined.IsZero() {
				g.joined = now
			}
			g.renewed = now
		}
		g.observe(leases, now)
		g.update(now)
		return g.Members()
	}
	for _, c := range []struct {
		at      time.Duration
		renewed bool
		leases  []coordinationv1.Lease
		want    []string
	}{
		{0, true, []coordinationv1.Lease{memberLease("a", "1"), memberLease("b", "1")}, []string{"b"}},
		{5 * time.Second, true, []coordinationv1.Lease{memberLease("a", "2"), memberLease("b", "2")}, []string{"b"}},
		// Two renewals in: a counts itself.
		{10 * time.Second, true, []coordinationv1.Lease{memberLease("a", "3"), memberLease("b", "2")}, []string{"a", "b"}},
		// b last changed at 5s: live until 20s.
		{19 * time.Second, true, []coordinationv1.Lease{memberLease("a", "4"), memberLease("b", "2")}, []string{"a", "b"}},
		{20 * time.Second, true, []coordinationv1.Lease{memberLease("a", "5"), memberLease("b", "2")}, []string{"a"}},
		// b's Lease is gone: nothing to count; a Lease not named after its holder is not a member's.
		{25 * time.Second, true, []coordinationv1.Lease{memberLease("a", "6"), {ObjectMeta: metav1.ObjectMeta{Name: "x"}, Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("c")}}}, []string{"a"}},
		// a cannot renew from 30s on (last renewal 25s): it counts itself out at 35s, a renewal before 40s.
		{30 * time.Second, false, []coordinationv1.Lease{memberLease("a", "6")}, []string{"a"}},
		{35 * time.Second, false, []coordinationv1.Lease{memberLease("a", "6")}, nil},
	} {
		if got := step(c.at, c.renewed, c.leases...); !slices.Equal(got, c.want) {
			t.Errorf("at %s: members %v, want %v", c.at, got, c.want)
		}
	}
}

// TestUpdateTellsGains: a change of members reports as gained exactly the clusters this replica owns now
// and did not before; no change, no report.
func TestUpdateTellsGains(t *testing.T) {
	const d = 15 * time.Second
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0.Add(10*time.Second + d)
	g := &Group{identity: "a", duration: d, seen: map[string]sighting{}, joined: t0, renewed: t0.Add(10 * time.Second),
		now: func() time.Time { return now }}
	g.observe([]coordinationv1.Lease{memberLease("b", "1")}, t0.Add(10*time.Second))
	first := g.update(t0.Add(10 * time.Second))
	if first == nil {
		t.Fatal("a counting itself in reported no gains")
	}
	if g.update(t0.Add(11*time.Second)) != nil {
		t.Fatal("no change of members, yet gains reported")
	}
	// b expires: a, still renewing, gains exactly what b owned.
	g.renewed = t0.Add(10*time.Second + d)
	gained := g.update(t0.Add(10*time.Second + d))
	if gained == nil {
		t.Fatal("b expiring reported no gains")
	}
	for _, c := range clusterNames(300) {
		if want := Owner(c, []string{"a", "b"}) == "b"; gained(c) != want {
			t.Fatalf("%s: gained %t, owned by b before: %t", c, gained(c), want)
		}
		if !g.Owns(c) {
			t.Fatalf("%s: a alone does not own it", c)
		}
	}
}

// TestStarvedOwnsNothing: a replica whose renewals stopped owns nothing once its last renewal is as old as a
// lease less a renewal, even though its view of the members was not updated since (its loop is starved): by
// then another replica may count it out and take its clusters. Once it renews, it takes them up again.
func TestStarvedOwnsNothing(t *testing.T) {
	const d = 15 * time.Second
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0
	g := &Group{identity: "a", duration: d, seen: map[string]sighting{}, members: []string{"a"}, joined: t0, renewed: t0,
		now: func() time.Time { return now }}
	if now = t0.Add(9 * time.Second); !g.Owns("cluster-1") {
		t.Fatal("renewed 9 s ago (lease 15 s, renewals every 5 s): owns nothing")
	}
	if now = t0.Add(10 * time.Second); g.Owns("cluster-1") {
		t.Fatal("renewed 10 s ago: still owns a cluster another replica may take over")
	}
	// The late renewal lands before the view changed: the members are the same, yet the events dropped
	// during the lapse were nobody's, so every cluster a owns is gained anew, and only once.
	g.renewed = now.Add(-time.Second)
	gained := g.update(now)
	if gained == nil || !gained("cluster-1") || !g.Owns("cluster-1") {
		t.Fatal("a renewal after a lapse did not give back the clusters the lapse denied")
	}
	if g.update(now) != nil {
		t.Fatal("gains reported twice for one lapse")
	}
}

// TestObserveForgetsLongDead: a Lease unchanged for ten lease durations is reported for deletion.
func TestObserveForgetsLongDead(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g := &Group{identity: "a", duration: 3 * time.Second, seen: map[string]sighting{}}
	l := memberLease("b", "1")
	if dead := g.observe([]coordinationv1.Lease{l}, t0); len(dead) != 0 {
		t.Fatalf("fresh Lease reported dead")
	}
	if dead := g.observe([]coordinationv1.Lease{l}, t0.Add(30*time.Second)); len(dead) != 0 {
		t.Fatalf("Lease reported dead at exactly ten durations")
	}
	if dead := g.observe([]coordinationv1.Lease{l}, t0.Add(31*time.Second)); len(dead) != 1 {
		t.Fatalf("Lease dead for over ten durations not reported")
	}
}

// TestNilGroupOwnsAll: without sharding every cluster is this replica's, and controllers keep leader election.
func TestNilGroupOwnsAll(t *testing.T) {
	var g *Group
	if !g.Owns("anything") || g.Members() != nil {
		t.Error("a nil group should own every cluster")
	}
	if o := g.Options(controllerOptions()); o.NeedLeaderElection != nil {
		t.Error("a nil group changed leader election")
	}
}

func controllerOptions() controller.Options { return controller.Options{} }
