package clusterstatus

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// TestNoExecuteFor: an unreachable cluster is tainted NoExecute one heartbeat period after its grace period,
// a not-ready one at once.
func TestNoExecuteFor(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	at := func(ago time.Duration) *time.Time { v := now.Add(-ago); return &v }
	const u, nr = clusterv1alpha1.TaintClusterUnreachable, clusterv1alpha1.TaintClusterNotReady
	for _, tt := range []struct {
		name     string
		taint    string
		renewed  *time.Time
		want     string
		wantWait time.Duration
	}{
		{"healthy", "", at(time.Second), "", 0},
		{"not ready", nr, at(time.Second), nr, 0},
		{"just past the grace period", u, at(41 * time.Second), "", 9 * time.Second},
		{"a heartbeat period past it", u, at(50 * time.Second), u, 0},
		{"no heartbeat since the hub started", u, nil, u, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, wait := noExecuteFor(tt.taint, tt.renewed, now, 40*time.Second)
			if got != tt.want || wait != tt.wantWait {
				t.Fatalf("got %q after %s, want %q after %s", got, wait, tt.want, tt.wantWait)
			}
		})
	}
	// With a grace period of 160 s the Leases are renewed every 40 s, and the taint comes one such period late.
	if got, wait := noExecuteFor(u, at(170*time.Second), now, 160*time.Second); got != "" || wait != 30*time.Second {
		t.Fatalf("grace 160 s, 170 s without a heartbeat: got %q after %s, want none for 30s", got, wait)
	}
}

// TestDecideFailover: the guard, the hub's start and the rate limit hold a NoExecute health taint back, and
// the Failover condition says which.
func TestDecideFailover(t *testing.T) {
	const u, nr = clusterv1alpha1.TaintClusterUnreachable, clusterv1alpha1.TaintClusterNotReady
	opts := FailoverOptions{UnhealthyThreshold: 0.55, PerMinute: 6}
	allow := func() (bool, time.Duration) { return true, 0 }
	deny := func() (bool, time.Duration) { return false, 7 * time.Second }
	calm := fleetView{unreachable: 1, total: 3}
	for _, tt := range []struct {
		name       string
		want, has  string
		fleet      fleetView
		take       func() (bool, time.Duration)
		wantTaint  string
		wantReason string // "" for no condition
		wantRetry  time.Duration
	}{
		{"healthy: nothing", "", u, calm, allow, "", "", 0},
		{"one of three unreachable", u, "", calm, allow, u, ReasonTainted, HeartbeatPeriod},
		{"already tainted", u, u, calm, deny, u, ReasonTainted, HeartbeatPeriod},
		{"half the fleet is not more than 55%", u, "", fleetView{unreachable: 2, total: 4}, allow, u, ReasonTainted, HeartbeatPeriod},
		{"two of three: the guard", u, "", fleetView{unreachable: 2, total: 3}, allow, "", ReasonMassFailureGuard, HeartbeatPeriod},
		{"the guard removes a taint", u, u, fleetView{unreachable: 3, total: 3}, allow, "", ReasonMassFailureGuard, HeartbeatPeriod},
		{"the guard leaves not-ready alone", nr, "", fleetView{unreachable: 3, total: 4}, allow, nr, ReasonTainted, HeartbeatPeriod},
		{"hub starting: none added", u, "", fleetView{unreachable: 1, total: 3, startingFor: 3 * time.Second}, allow, "", ReasonHubStarting, 3 * time.Second},
		{"hub starting: one there stays", u, u, fleetView{unreachable: 1, total: 3, startingFor: 3 * time.Second}, allow, u, ReasonTainted, HeartbeatPeriod},
		{"rate limited", u, "", calm, deny, "", ReasonRateLimited, 7 * time.Second},
		{"swapping keys is no new taint", nr, u, calm, deny, nr, ReasonTainted, HeartbeatPeriod},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := decideFailover(tt.want, tt.has, tt.fleet, opts, tt.take)
			reason := ""
			if v.condition != nil {
				reason = v.condition.Reason
				if v.condition.Type != clusterv1alpha1.ClusterConditionFailover || v.condition.Message == "" ||
					(v.condition.Status == metav1.ConditionTrue) != (reason == ReasonTainted) {
					t.Fatalf("condition %+v", v.condition)
				}
			}
			if v.taint != tt.wantTaint || reason != tt.wantReason || v.retry != tt.wantRetry {
				t.Fatalf("got taint %q reason %q retry %s, want %q %q %s", v.taint, reason, v.retry, tt.wantTaint, tt.wantReason, tt.wantRetry)
			}
		})
	}
	v := decideFailover(u, "", fleetView{unreachable: 2, total: 3}, opts, allow)
	if !strings.Contains(v.condition.Message, "2 of 3 clusters are unreachable, more than 55%") {
		t.Fatalf("the guard must say why: %s", v.condition.Message)
	}
}

// TestFailoverRateLimit: at most PerMinute clusters per minute are tainted; the one after waits its turn.
func TestFailoverRateLimit(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	m := NewHealthMonitor(nil, nil, 40*time.Second, FailoverOptions{UnhealthyThreshold: 0.55, PerMinute: 6}, func() time.Time { return now })
	if ok, _ := m.take(); !ok {
		t.Fatal("the first cluster must be tainted at once")
	}
	ok, wait := m.take()
	if ok || wait != 10*time.Second {
		t.Fatalf("second cluster right after: ok=%v wait %s, want to wait 10s", ok, wait)
	}
	now = now.Add(10 * time.Second)
	if ok, _ := m.take(); !ok {
		t.Fatal("after 10s, six per minute allow the next")
	}
}

// TestUnreachableShare: the guard counts the clusters whose heartbeat is older than the grace period, that
// have no Lease, or that were judged unreachable before the hub started and have not renewed since.
func TestUnreachableShare(t *testing.T) {
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	h := heartbeats{seen: map[string]heartbeat{}}
	h.observe("fresh", "1", start)
	h.observe("silent", "1", start)
	h.observe("no-lease", "", start)
	h.observe("lost", "1", start)
	h.lose("lost")
	h.observe("fresh", "2", start.Add(30*time.Second))
	if n, total := h.unreachable(start.Add(10*time.Second), 40*time.Second); n != 2 || total != 4 {
		t.Fatalf("at 10s: %d of %d unreachable, want 2 of 4 (no-lease, lost)", n, total)
	}
	if n, _ := h.unreachable(start.Add(50*time.Second), 40*time.Second); n != 3 {
		t.Fatalf("at 50s: %d unreachable, want 3 (silent too)", n)
	}
	h.observe("lost", "2", start.Add(55*time.Second))
	if n, _ := h.unreachable(start.Add(56*time.Second), 40*time.Second); n != 2 {
		t.Fatalf("a lost cluster that renews is back: %d unreachable, want 2", n)
	}
}
