package clusterstatus

import (
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

func TestEvaluate(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	at := func(ago time.Duration) *time.Time { v := now.Add(-ago); return &v }
	healthy := &clusterv1alpha1.Cluster{Status: clusterv1alpha1.ClusterStatus{Health: &clusterv1alpha1.HealthEndpoints{Livez: "ok", Readyz: "ok"}}}
	failing := &clusterv1alpha1.Cluster{Status: clusterv1alpha1.ClusterStatus{Health: &clusterv1alpha1.HealthEndpoints{Livez: "ok", Readyz: "[-]etcd failed"}}}
	tests := []struct {
		name       string
		cluster    *clusterv1alpha1.Cluster
		renewed    *time.Time
		wantStatus metav1.ConditionStatus
		wantReason string
		wantTaint  string
	}{
		{"never reported", healthy, nil, metav1.ConditionUnknown, ReasonNoHeartbeatYet, clusterv1alpha1.TaintClusterUnreachable},
		{"fresh and healthy", healthy, at(5 * time.Second), metav1.ConditionTrue, ReasonReady, ""},
		{"at the grace period", healthy, at(40 * time.Second), metav1.ConditionTrue, ReasonReady, ""},
		{"past the grace period", healthy, at(41 * time.Second), metav1.ConditionUnknown, ReasonUnreachable, clusterv1alpha1.TaintClusterUnreachable},
		{"silent and failing: unreachable wins", failing, at(time.Minute), metav1.ConditionUnknown, ReasonUnreachable, clusterv1alpha1.TaintClusterUnreachable},
		{"readyz failing", failing, at(time.Second), metav1.ConditionFalse, ReasonNotReady, clusterv1alpha1.TaintClusterNotReady},
		{"no health reported", &clusterv1alpha1.Cluster{}, at(time.Second), metav1.ConditionFalse, ReasonNotReady, clusterv1alpha1.TaintClusterNotReady},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, taint := Evaluate(tt.cluster, tt.renewed, now, 40*time.Second)
			if c.Status != tt.wantStatus || c.Reason != tt.wantReason || taint != tt.wantTaint {
				t.Fatalf("got %s/%s taint %q, want %s/%s taint %q (%s)", c.Status, c.Reason, taint, tt.wantStatus, tt.wantReason, tt.wantTaint, c.Message)
			}
			if c.Message == "" {
				t.Fatal("condition without a message")
			}
		})
	}
}

func TestWithHealthTaints(t *testing.T) {
	now := time.Now()
	user := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	userNoExecute := corev1.Taint{Key: "maintenance", Effect: corev1.TaintEffectNoExecute}
	unreachable := corev1.Taint{Key: clusterv1alpha1.TaintClusterUnreachable, Effect: corev1.TaintEffectNoSchedule}
	unreachableNoExecute := corev1.Taint{Key: clusterv1alpha1.TaintClusterUnreachable, Effect: corev1.TaintEffectNoExecute}
	notReady := corev1.Taint{Key: clusterv1alpha1.TaintClusterNotReady, Effect: corev1.TaintEffectNoSchedule}
	keys := func(ts []corev1.Taint) []string {
		var out []string
		for _, t := range ts {
			out = append(out, t.Key+":"+string(t.Effect))
		}
		return out
	}
	const u, nr = clusterv1alpha1.TaintClusterUnreachable, clusterv1alpha1.TaintClusterNotReady
	tests := []struct {
		name                  string
		in                    []corev1.Taint
		noSchedule, noExecute string
		out                   []string
	}{
		{"adds", []corev1.Taint{user}, u, "", []string{"dedicated:NoSchedule", u + ":NoSchedule"}},
		{"adds both", []corev1.Taint{user}, u, u, []string{"dedicated:NoSchedule", u + ":NoSchedule", u + ":NoExecute"}},
		{"adds NoExecute to NoSchedule", []corev1.Taint{unreachable}, u, u, []string{u + ":NoSchedule", u + ":NoExecute"}},
		{"swaps both", []corev1.Taint{unreachable, user, unreachableNoExecute}, nr, nr, []string{"dedicated:NoSchedule", nr + ":NoSchedule", nr + ":NoExecute"}},
		{"held back: NoSchedule only", []corev1.Taint{unreachable, unreachableNoExecute}, u, "", []string{u + ":NoSchedule"}},
		{"removes, keeping the user's", []corev1.Taint{userNoExecute, notReady, user, unreachableNoExecute}, "", "", []string{"maintenance:NoExecute", "dedicated:NoSchedule"}},
		{"keeps existing ones as they are", []corev1.Taint{unreachable, unreachableNoExecute}, u, u, []string{u + ":NoSchedule", u + ":NoExecute"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := keys(withHealthTaints(tt.in, tt.noSchedule, tt.noExecute, now)); !slices.Equal(got, tt.out) {
				t.Fatalf("got %v, want %v", got, tt.out)
			}
		})
	}
	old := metav1.NewTime(now.Add(-time.Hour))
	kept := withHealthTaints([]corev1.Taint{{Key: u, Effect: corev1.TaintEffectNoExecute, TimeAdded: &old}}, u, u, now)
	if !kept[0].TimeAdded.Equal(&old) {
		t.Fatalf("an existing NoExecute taint must keep the time it was added (tolerations count from it): %v", kept[0].TimeAdded)
	}
}

// TestHeartbeatsFollowTheHubsClock: a Lease counts as renewed when the hub sees a new version of it, at the
// time the hub saw it; the renewTime the agent wrote plays no part.
func TestHeartbeatsFollowTheHubsClock(t *testing.T) {
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	h := heartbeats{seen: map[string]heartbeat{}}
	steps := []struct {
		name        string
		cluster     string
		version     string
		at          time.Duration
		wantSeen    time.Duration
		wantChanged bool
	}{
		{"first sight is no change", "a", "1", 0, 0, false},
		{"same version later keeps the first time", "a", "1", 30 * time.Second, 0, false},
		{"a new version is a renewal, seen now", "a", "2", 35 * time.Second, 35 * time.Second, true},
		{"unchanged again", "a", "2", 80 * time.Second, 35 * time.Second, true},
		{"another cluster has its own record", "b", "7", 80 * time.Second, 80 * time.Second, false},
	}
	for _, s := range steps {
		hb := h.observe(s.cluster, s.version, start.Add(s.at))
		if !hb.observed.Equal(start.Add(s.wantSeen)) || hb.changed != s.wantChanged {
			t.Fatalf("%s: observed %s changed %v, want %s %v", s.name, hb.observed.Sub(start), hb.changed, s.wantSeen, s.wantChanged)
		}
	}
	h.forget("a")
	if hb := h.observe("a", "2", start.Add(time.Hour)); hb.changed || !hb.observed.Equal(start.Add(time.Hour)) {
		t.Fatalf("a forgotten cluster is seen anew: %+v", hb)
	}
}

// TestTheHubsOwnLeaseWriteIsNoHeartbeat: the health monitor sets a Lease's duration; neither the version its
// write makes nor the one it replaced (a cache behind the write still shows it) counts as a renewal, and the
// agent's next renewal does.
func TestTheHubsOwnLeaseWriteIsNoHeartbeat(t *testing.T) {
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	h := heartbeats{seen: map[string]heartbeat{}}
	h.observe("a", "1", start)
	h.observe("a", "2", start.Add(5*time.Second)) // a renewal, seen at 5 s
	h.wrote("a", "2", "3")
	for _, version := range []string{"3", "2", "3"} {
		if hb := h.observe("a", version, start.Add(30*time.Second)); !hb.observed.Equal(start.Add(5 * time.Second)) {
			t.Fatalf("version %s after the hub's write: last heartbeat seen at %s, want 5s", version, hb.observed.Sub(start))
		}
	}
	if hb := h.observe("a", "4", start.Add(40*time.Second)); !hb.changed || !hb.observed.Equal(start.Add(40*time.Second)) {
		t.Fatalf("the agent's renewal after the hub's write: %+v, want seen at 40s", hb)
	}
	if hb := h.observe("a", "2", start.Add(50*time.Second)); !hb.observed.Equal(start.Add(50 * time.Second)) {
		t.Fatal("an older version seen after a renewal is a change like any other")
	}
}

func TestRenewalPeriod(t *testing.T) {
	for _, tt := range []struct{ grace, want time.Duration }{
		{20 * time.Second, 10 * time.Second}, {40 * time.Second, 10 * time.Second},
		{160 * time.Second, 40 * time.Second}, {10 * time.Minute, 150 * time.Second},
	} {
		if got := RenewalPeriod(tt.grace); got != tt.want {
			t.Errorf("RenewalPeriod(%s) = %s, want %s", tt.grace, got, tt.want)
		}
		lease := &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To(int32(tt.grace / time.Second))}}
		if got := LeasePeriod(lease); got != tt.want {
			t.Errorf("LeasePeriod(a Lease of %s) = %s, want %s", tt.grace, got, tt.want)
		}
	}
	if got := LeasePeriod(&coordinationv1.Lease{}); got != HeartbeatPeriod {
		t.Errorf("a Lease without a duration is renewed every %s, want %s", got, HeartbeatPeriod)
	}
}

// TestFleetViewCountsOwnedClustersOnly: with sharding, clusters another replica took over leave this
// monitor's fleet view, so their silence here does not count as unreachable for the mass-failure guard.
func TestFleetViewCountsOwnedClustersOnly(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := heartbeats{seen: map[string]heartbeat{}}
	h.observe("kept", "1", now)
	h.observe("moved", "1", now)
	h.keep(func(cluster string) bool { return cluster == "kept" })
	if n, total := h.unreachable(now.Add(time.Hour), time.Minute); n != 1 || total != 1 {
		t.Fatalf("unreachable %d of %d, want 1 of 1 (the kept cluster only)", n, total)
	}
}
