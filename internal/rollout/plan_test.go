package rollout

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func oneAtATime() *policyv1alpha1.RolloutStrategy {
	return &policyv1alpha1.RolloutStrategy{Type: policyv1alpha1.RolloutProgressive, Progressive: &policyv1alpha1.ProgressiveRollout{
		MaxConcurrency: ptr.To(intstr.FromInt32(1)), MinSuccessTime: metav1.Duration{Duration: 5 * time.Second},
		ProgressDeadline: &metav1.Duration{Duration: 30 * time.Second}}}
}

func clusters(hash string, healthy bool, names ...string) []Cluster {
	var out []Cluster
	for _, n := range names {
		out = append(out, Cluster{Name: n, Hash: hash, Healthy: healthy})
	}
	return out
}

func states(st workv1alpha1.RolloutStatus) []workv1alpha1.RolloutState {
	var out []workv1alpha1.RolloutState
	for _, c := range st.Clusters {
		out = append(out, c.State)
	}
	return out
}

func mustPlan(t *testing.T, in Input) Decision {
	t.Helper()
	d, err := Plan(in)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestPlanOneClusterAtATime walks a change through three clusters, one at a time, each healthy for
// minSuccessTime before the next starts.
func TestPlanOneClusterAtATime(t *testing.T) {
	in := Input{Strategy: oneAtATime(), Clusters: clusters("a", true, "m1", "m2", "m3"), TargetHash: "a", TargetRevision: 1, Now: t0}
	first := mustPlan(t, in)
	if len(first.OnTarget) != 3 || first.Status.StableHash != "a" || len(first.Started) != 0 {
		t.Fatalf("first decision must take what runs as stable and roll nothing: %+v", first)
	}
	in.Previous, in.Now = &first.Status, t0.Add(5*time.Second)
	if d := mustPlan(t, in); !d.Complete {
		t.Fatalf("healthy for minSuccessTime everywhere: want complete, got %v", states(d.Status))
	}

	// Revision b: only m1 starts.
	settled := mustPlan(t, in)
	in.Previous, in.TargetHash, in.TargetRevision, in.Now = &settled.Status, "b", 2, t0.Add(10*time.Second)
	d := mustPlan(t, in)
	if !slices.Equal(d.Started, []string{"m1"}) || d.Status.Wave != 1 || d.Status.StableHash != "a" || d.OnTarget["m2"] {
		t.Fatalf("want m1 started in wave 1 on stable a, got started %v wave %d stable %q", d.Started, d.Status.Wave, d.Status.StableHash)
	}
	// m1 healthy on b for 3 s: m2 waits, and the hub comes back when the 5 s are up.
	in.Previous, in.Clusters[0].Hash, in.Now = &d.Status, "b", t0.Add(11*time.Second)
	d = mustPlan(t, in)
	in.Previous, in.Now = &d.Status, t0.Add(14*time.Second)
	d = mustPlan(t, in)
	if len(d.Started) != 0 || d.RequeueAfter != 2*time.Second {
		t.Fatalf("m1 healthy 3 of 5 s: want nothing started and a requeue in 2s, got %v, %v", d.Started, d.RequeueAfter)
	}
	in.Previous, in.Now = &d.Status, t0.Add(16*time.Second)
	d = mustPlan(t, in)
	if !slices.Equal(d.Started, []string{"m2"}) || d.Status.Wave != 2 || d.Status.Clusters[0].State != workv1alpha1.RolloutSucceeded {
		t.Fatalf("want m1 succeeded and m2 started in wave 2, got %v, started %v", states(d.Status), d.Started)
	}
}

// TestPlanMinSuccessTimeSurvivesTheStatus: the status the clocks are kept in holds whole seconds; a cluster
// healthy at 10.3 s, its status written and read back, still waits its full 5 s before the next starts.
func TestPlanMinSuccessTimeSurvivesTheStatus(t *testing.T) {
	roundTrip := func(s workv1alpha1.RolloutStatus) *workv1alpha1.RolloutStatus {
		t.Helper()
		raw, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var out workv1alpha1.RolloutStatus
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatal(err)
		}
		return &out
	}
	in := Input{Strategy: oneAtATime(), Clusters: clusters("a", true, "m1", "m2"), TargetHash: "a", TargetRevision: 1, Now: t0}
	settled := mustPlan(t, in)
	in.Previous, in.TargetHash, in.TargetRevision, in.Now = roundTrip(settled.Status), "b", 2, t0.Add(10*time.Second)
	d := mustPlan(t, in)
	in.Previous, in.Clusters[0].Hash, in.Now = roundTrip(d.Status), "b", t0.Add(10300*time.Millisecond)
	d = mustPlan(t, in)
	healthyAt := in.Now
	in.Previous, in.Now = roundTrip(d.Status), healthyAt.Add(4900*time.Millisecond)
	if d = mustPlan(t, in); len(d.Started) != 0 || d.RequeueAfter <= 0 {
		t.Fatalf("m1 healthy 4.9 of 5 s: want nothing started and a requeue, got started %v, requeue %v", d.Started, d.RequeueAfter)
	}
	in.Previous, in.Now = roundTrip(d.Status), in.Now.Add(d.RequeueAfter)
	if d = mustPlan(t, in); !slices.Equal(d.Started, []string{"m2"}) || in.Now.Sub(healthyAt) < 5*time.Second {
		t.Fatalf("want m2 started once the requeue is due, at least 5 s after m1 was healthy; got started %v at +%v", d.Started, in.Now.Sub(healthyAt))
	}
}

// TestPlanStopsAtMaxFailures: a cluster not healthy within progressDeadline fails, and with maxFailures 0
// nothing else starts; the others stay on the stable revision, also when paused or resumed.
func TestPlanStopsAtMaxFailures(t *testing.T) {
	in := Input{Strategy: oneAtATime(), Clusters: clusters("a", true, "m1", "m2", "m3"), TargetHash: "a", TargetRevision: 1, Now: t0}
	d := mustPlan(t, in)
	in.Previous, in.Now = &d.Status, t0.Add(6*time.Second)
	d = mustPlan(t, in)
	in.Previous, in.TargetHash, in.TargetRevision, in.Now = &d.Status, "b", 2, t0.Add(7*time.Second)
	d = mustPlan(t, in)
	in.Clusters[0] = Cluster{Name: "m1", Hash: "b", Healthy: false}
	in.Previous, in.Now = &d.Status, t0.Add(20*time.Second)
	if d = mustPlan(t, in); d.RequeueAfter != 17*time.Second {
		t.Fatalf("want a requeue at the deadline (17s), got %v", d.RequeueAfter)
	}
	in.Previous, in.Now = &d.Status, t0.Add(37*time.Second)
	d = mustPlan(t, in)
	if !d.Failed || d.Complete || len(d.Started) != 0 || d.Status.Clusters[0].State != workv1alpha1.RolloutFailed || d.OnTarget["m2"] {
		t.Fatalf("want failed, m1 Failed, nothing started: %+v", d)
	}
	in.Previous, in.Now = &d.Status, t0.Add(90*time.Second)
	if d = mustPlan(t, in); !d.Failed || len(d.Started) != 0 {
		t.Fatalf("a failed rollout must stay stopped: %+v", d)
	}
}

// TestPlanPause: a paused rollout starts no cluster; resumed, it goes on.
func TestPlanPause(t *testing.T) {
	in := Input{Strategy: oneAtATime(), Clusters: clusters("a", true, "m1", "m2"), TargetHash: "a", TargetRevision: 1, Now: t0}
	d := mustPlan(t, in)
	in.Previous, in.Now = &d.Status, t0.Add(6*time.Second)
	d = mustPlan(t, in)
	in.Previous, in.TargetHash, in.TargetRevision, in.Paused = &d.Status, "b", 2, true
	if d = mustPlan(t, in); len(d.Started) != 0 || d.Complete {
		t.Fatalf("paused: want nothing started, got %v", d.Started)
	}
	in.Previous, in.Paused = &d.Status, false
	if d = mustPlan(t, in); !slices.Equal(d.Started, []string{"m1"}) {
		t.Fatalf("resumed: want m1 started, got %v", d.Started)
	}
}

// TestPlanMandatoryGroupFirst: ProgressivePerGroup updates the mandatory group, then one group at a time.
func TestPlanMandatoryGroupFirst(t *testing.T) {
	s := &policyv1alpha1.RolloutStrategy{Type: policyv1alpha1.RolloutProgressivePerGroup, Progressive: &policyv1alpha1.ProgressiveRollout{
		MandatoryDecisionGroups: []policyv1alpha1.MandatoryDecisionGroup{{GroupName: "canary"}}}}
	groups := []Group{{Name: "canary", Clusters: []string{"m3"}}, {Name: "1", Clusters: []string{"m1", "m2"}}, {Name: "2", Clusters: []string{"m4"}}}
	in := Input{Strategy: s, Groups: groups, Clusters: clusters("a", true, "m1", "m2", "m3", "m4"), TargetHash: "a", TargetRevision: 1, Now: t0}
	d := mustPlan(t, in)
	in.Previous = &d.Status
	d = mustPlan(t, in)
	in.Previous, in.TargetHash, in.TargetRevision = &d.Status, "b", 2
	if d = mustPlan(t, in); !slices.Equal(d.Started, []string{"m3"}) {
		t.Fatalf("want the canary group first, got %v", d.Started)
	}
	in.Clusters[2].Hash = "b"
	in.Previous = &d.Status
	if d = mustPlan(t, in); !slices.Equal(d.Started, []string{"m1", "m2"}) {
		t.Fatalf("canary succeeded: want group 1 whole, got %v (%v)", d.Started, states(d.Status))
	}
}

// TestCount reads counts and percentages, and refuses what is neither.
func TestCount(t *testing.T) {
	for _, c := range []struct {
		v    intstr.IntOrString
		want int
		bad  bool
	}{{intstr.FromInt32(2), 2, false}, {intstr.FromString("50%"), 5, false}, {intstr.FromString("33%"), 3, false},
		{intstr.FromString("abc"), 0, true}, {intstr.FromString("150%"), 0, true}, {intstr.FromInt32(-1), 0, true}} {
		got, err := count(&c.v, 10, 0, "maxFailures")
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("count(%s) = %d, %v; want %d, error %v", c.v.String(), got, err, c.want, c.bad)
		}
	}
}
