package shard

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
)

const (
	// GroupLabel marks the Leases of the shard group's members; its value names the group.
	GroupLabel = "flotilla.io/shard-group"
	// HubGroup is the group of the hub's replicas.
	HubGroup = "hub"
	// leasePrefix starts the name of each member's Lease.
	leasePrefix = "flotilla-shard-"
	// MinLeaseDuration is the shortest lease duration: three renewals of at least a second each.
	MinLeaseDuration = 3 * time.Second
	// forgetAfter is how many lease durations a dead member's Lease stays before a member deletes it.
	forgetAfter = 10
)

// Group is this replica's view of the shard group: it renews its own Lease, reads the others', and says
// which clusters this replica owns.
type Group struct {
	identity string
	leases   coordinationclient.LeaseInterface
	duration time.Duration
	now      func() time.Time

	mu sync.Mutex
	// seen are the members' Leases by name, with when this replica saw each one change last.
	seen map[string]sighting
	// joined is when this replica's Lease was first written, renewed when it was last renewed (the time the
	// renewal was sent).
	joined, renewed time.Time
	// members is the current view, sorted; it includes identity only while this replica counts itself in.
	members []string
	// listeners are told, after each change of members, which clusters this replica gained.
	listeners []func(gained func(cluster string) bool)
	// lapsed is set when Owns denied a cluster because the renewals were late: the events dropped meanwhile
	// were nobody's, so once this replica counts itself in again, all it owns counts as gained.
	lapsed bool
}

// sighting is a member's Lease as this replica last saw it change.
type sighting struct {
	holder          string
	resourceVersion string
	at              time.Time
}

// NewGroup returns the group member identity, whose Lease lives in leases (one namespace) and lasts duration;
// it is renewed every third of it. Add it to the manager to run it.
func NewGroup(leases coordinationclient.LeaseInterface, identity string, duration time.Duration) (*Group, error) {
	if identity == "" {
		return nil, fmt.Errorf("shard group: no identity")
	}
	if duration < MinLeaseDuration {
		return nil, fmt.Errorf("shard group: lease duration %s is shorter than %s", duration, MinLeaseDuration)
	}
	return &Group{identity: identity, leases: leases, duration: duration, now: time.Now, seen: map[string]sighting{}}, nil
}

// Identity is this replica's name in the group.
func (g *Group) Identity() string { return g.identity }

// LeaseDuration is how long a member's Lease lasts without renewal: the longest a dead replica's clusters
// wait for another owner.
func (g *Group) LeaseDuration() time.Duration { return g.duration }

// renewPeriod is how often the Lease is renewed and the others' read.
func (g *Group) renewPeriod() time.Duration { return g.duration / 3 }

// Members are the live members as this replica sees them, sorted.
func (g *Group) Members() []string {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.members)
}

// Owns reports whether this replica acts on cluster. Without sharding (nil) it owns every cluster; a member
// not (or no longer) counted in owns none, nor does one whose last renewal is as old as the others may count
// it out after, also when its own view was not updated since (a starved renewal loop).
func (g *Group) Owns(cluster string) bool {
	if g == nil {
		return true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.now().Sub(g.renewed) >= g.duration-g.renewPeriod() {
		g.lapsed = true
		return false
	}
	return Owner(cluster, g.members) == g.identity
}

// NeedLeaderElection is false: every replica is a member, leader or not.
func (g *Group) NeedLeaderElection() bool { return false }

// Start renews this replica's Lease and reads the group until ctx ends, then leaves the group: it stops
// owning clusters and deletes its Lease, so the others take them over at their next renewal.
func (g *Group) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("shard")
	tick := time.NewTicker(g.renewPeriod())
	defer tick.Stop()
	for {
		if err := g.sync(ctx); err != nil && ctx.Err() == nil {
			log.Error(err, "shard group: renewing or reading the Leases")
		}
		select {
		case <-ctx.Done():
			g.leave()
			return nil
		case <-tick.C:
		}
	}
}

// sync renews this replica's Lease, reads the members' and updates the view.
func (g *Group) sync(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("shard")
	sent := g.now()
	renewErr := g.renew(ctx, sent)
	list, err := g.leases.List(ctx, metav1.ListOptions{LabelSelector: GroupLabel + "=" + HubGroup})
	now := g.now()
	g.mu.Lock()
	if renewErr == nil {
		if g.joined.IsZero() {
			g.joined = sent
		}
		g.renewed = sent
	}
	var dead []coordinationv1.Lease
	if err == nil {
		dead = g.observe(list.Items, now)
	}
	lapsed := g.lapsed
	gained := g.update(now)
	retaken := lapsed && !g.lapsed
	listeners := slices.Clone(g.listeners)
	g.mu.Unlock()
	if gained != nil {
		if retaken {
			log.Info("shard group: renewals were late, so this replica owned nothing for a while; taking its clusters up again", "sync", now.Sub(sent))
		}
		for _, l := range listeners {
			l(gained)
		}
	}
	for _, l := range dead {
		// Only the version read: a member that came back meanwhile keeps its Lease.
		_ = g.leases.Delete(ctx, l.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &l.ResourceVersion}})
	}
	if renewErr != nil {
		return renewErr
	}
	return err
}

// renew creates or renews this replica's Lease.
func (g *Group) renew(ctx context.Context, now time.Time) error {
	name := leaseName(g.identity)
	lease, err := g.leases.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{GroupLabel: HubGroup}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(g.identity), AcquireTime: ptr.To(metav1.NewMicroTime(now))}}
		g.fill(lease, now)
		_, err = g.leases.Create(ctx, lease, metav1.CreateOptions{})
		return err
	} else if err != nil {
		return err
	}
	g.fill(lease, now)
	_, err = g.leases.Update(ctx, lease, metav1.UpdateOptions{})
	return err
}

func (g *Group) fill(lease *coordinationv1.Lease, now time.Time) {
	lease.Spec.RenewTime = ptr.To(metav1.NewMicroTime(now))
	lease.Spec.LeaseDurationSeconds = ptr.To(int32((g.duration + time.Second - 1) / time.Second))
}

// observe records the Leases read at now and returns those dead for forgetAfter lease durations. Liveness is
// judged by this replica's own clock, from when it saw a Lease change, not by the renew time written in it:
// the replicas' clocks may differ.
func (g *Group) observe(leases []coordinationv1.Lease, now time.Time) (dead []coordinationv1.Lease) {
	present := map[string]bool{}
	for _, l := range leases {
		present[l.Name] = true
		holder := ptr.Deref(l.Spec.HolderIdentity, "")
		if holder == "" || leaseName(holder) != l.Name {
			continue // not a member's Lease
		}
		s, ok := g.seen[l.Name]
		if !ok || s.resourceVersion != l.ResourceVersion {
			g.seen[l.Name] = sighting{holder: holder, resourceVersion: l.ResourceVersion, at: now}
		} else if now.Sub(s.at) > forgetAfter*g.duration {
			dead = append(dead, l)
		}
	}
	for name := range g.seen {
		if !present[name] {
			delete(g.seen, name)
		}
	}
	return dead
}

// update recomputes the members at now; when they changed, or this replica counts itself in after a lapse,
// it returns which clusters this replica gained.
func (g *Group) update(now time.Time) (gained func(cluster string) bool) {
	members := live(g.seen, g.identity, g.joined, g.renewed, now, g.duration)
	before := g.members
	if g.lapsed && slices.Contains(members, g.identity) {
		g.lapsed, before = false, nil
	} else if slices.Equal(members, g.members) {
		return nil
	}
	g.members = members
	return func(cluster string) bool {
		return Owner(cluster, members) == g.identity && Owner(cluster, before) != g.identity
	}
}

// live are the members at now, sorted: the others whose Lease changed within duration, and this replica once
// it has been in the group for two renewals (the others have read its Lease by then) and as long as its last
// renewal is younger than duration less a renewal (before the others could count it out).
func live(seen map[string]sighting, self string, joined, renewed, now time.Time, duration time.Duration) []string {
	var members []string
	for _, s := range seen {
		if s.holder != self && now.Sub(s.at) < duration {
			members = append(members, s.holder)
		}
	}
	renew := duration / 3
	if !joined.IsZero() && now.Sub(joined) >= 2*renew && now.Sub(renewed) < duration-renew {
		members = append(members, self)
	}
	slices.Sort(members)
	return slices.Compact(members)
}

// leave stops owning clusters and deletes this replica's Lease.
func (g *Group) leave() {
	g.mu.Lock()
	g.members = nil
	g.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = g.leases.Delete(ctx, leaseName(g.identity), metav1.DeleteOptions{})
}

// leaseName is the name of member identity's Lease: identities (host_uuid) need not be valid object names.
func leaseName(identity string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(identity))
	return fmt.Sprintf("%s%016x", leasePrefix, h.Sum64())
}
