package scheduler

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// appFailover is a duplicated Deployment on a and b whose policy fails over after toleration seconds of
// unhealth.
func appFailover(toleration int32, clusters ...string) *workv1alpha1.ResourceBindingSpec {
	var placed []workv1alpha1.TargetCluster
	for _, c := range clusters {
		placed = append(placed, workv1alpha1.TargetCluster{Name: c, Replicas: 2})
	}
	spec := deployment(2, &policyv1alpha1.Placement{}, placed...)
	spec.Failover = &policyv1alpha1.FailoverBehavior{Application: &policyv1alpha1.ApplicationFailoverBehavior{
		DecisionConditions: policyv1alpha1.DecisionConditions{TolerationSeconds: ptr.To(toleration)},
		PurgeMode:          policyv1alpha1.PurgeGracefully, GracePeriodSeconds: ptr.To(int32(120)),
	}}
	return spec
}

func health(cluster string, h workv1alpha1.ResourceHealth, since time.Time) workv1alpha1.AggregatedStatusItem {
	return workv1alpha1.AggregatedStatusItem{ClusterName: cluster, Health: h, HealthTransitionTime: &metav1.Time{Time: since}}
}

// TestApplicationFailures: a cluster fails once its application has been Unhealthy for tolerationSeconds,
// measured from the persisted transition time; before that the scheduler is told when to look again.
func TestApplicationFailures(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name       string
		spec       *workv1alpha1.ResourceBindingSpec
		items      []workv1alpha1.AggregatedStatusItem
		wantFailed string
		wantWait   time.Duration
	}{
		{"unhealthy longer than tolerated", appFailover(10, "a", "b"),
			[]workv1alpha1.AggregatedStatusItem{health("a", workv1alpha1.ResourceHealthy, now.Add(-time.Hour)), health("b", workv1alpha1.ResourceUnhealthy, now.Add(-11*time.Second))}, "b", 0},
		{"unhealthy, still tolerated", appFailover(10, "a", "b"),
			[]workv1alpha1.AggregatedStatusItem{health("b", workv1alpha1.ResourceUnhealthy, now.Add(-4*time.Second))}, "", 6 * time.Second},
		{"unknown health is no failure", appFailover(10, "a", "b"),
			[]workv1alpha1.AggregatedStatusItem{health("b", workv1alpha1.ResourceUnknown, now.Add(-time.Hour))}, "", 0},
		{"a cluster no longer placed", appFailover(10, "a"),
			[]workv1alpha1.AggregatedStatusItem{health("b", workv1alpha1.ResourceUnhealthy, now.Add(-time.Hour))}, "", 0},
		{"no application failover in the policy", deployment(2, nil, workv1alpha1.TargetCluster{Name: "b"}),
			[]workv1alpha1.AggregatedStatusItem{health("b", workv1alpha1.ResourceUnhealthy, now.Add(-time.Hour))}, "", 0},
		{"no transition time yet", appFailover(10, "a", "b"),
			[]workv1alpha1.AggregatedStatusItem{{ClusterName: "b", Health: workv1alpha1.ResourceUnhealthy}}, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			failed, wait := applicationFailures(tt.spec, &workv1alpha1.ResourceBindingStatus{AggregatedStatus: tt.items}, now)
			got := strings.Join(mapKeys(failed), ",")
			if got != tt.wantFailed || wait != tt.wantWait {
				t.Errorf("failed %q wait %s, want %q and %s", got, wait, tt.wantFailed, tt.wantWait)
			}
		})
	}
}

func mapKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestFailoverRecordExpiry: a record keeps its cluster out of the binding's placement until it expires;
// then the scheduler drops it and the cluster may host the binding again.
func TestFailoverRecordExpiry(t *testing.T) {
	now := time.Now()
	record := func(cluster string, expires time.Duration) workv1alpha1.FailoverRecord {
		return workv1alpha1.FailoverRecord{FromCluster: cluster, Reason: ReasonApplicationFailure, ExpirationTimestamp: metav1.NewTime(now.Add(expires))}
	}
	live, wait := liveRecords([]workv1alpha1.FailoverRecord{record("a", -time.Second), record("b", time.Minute), record("c", 30*time.Second)}, now)
	if len(live) != 2 || live[0].FromCluster != "b" || live[1].FromCluster != "c" || wait != 30*time.Second {
		t.Fatalf("live %+v wait %s, want b and c, and 30s", live, wait)
	}

	clusters := []clusterv1alpha1.Cluster{cluster("a", "eu"), cluster("b", "eu")}
	spec := deployment(2, nil)
	spec.FailoverRecords = []workv1alpha1.FailoverRecord{record("a", time.Minute)}
	if res, err := Default().Schedule(spec, clusters, ""); err != nil || result(res.Clusters) != "b=2" {
		t.Fatalf("with a live record for a: placed %s (%v), want b only", result(res.Clusters), err)
	}
	spec.FailoverRecords = []workv1alpha1.FailoverRecord{record("a", -time.Second)}
	if res, err := Default().Schedule(spec, clusters, ""); err != nil || result(res.Clusters) != "a=2,b=2" {
		t.Fatalf("with an expired record for a: placed %s (%v), want a and b", result(res.Clusters), err)
	}
	taint := record("a", time.Minute)
	taint.Reason = ReasonTaintUntolerated
	spec.FailoverRecords = []workv1alpha1.FailoverRecord{taint}
	if res, err := Default().Schedule(spec, clusters, ""); err != nil || result(res.Clusters) != "a=2,b=2" {
		t.Fatalf("a taint record only carries state: placed %s (%v), want a and b", result(res.Clusters), err)
	}
}

// TestApplicationFailoverDecision: a failed cluster is left for another one when one fits, with an eviction
// task of the application's purge mode and grace period; when none fits, nothing moves and the scheduler
// says why.
func TestApplicationFailoverDecision(t *testing.T) {
	now := time.Now()
	r := &Controller[*workv1alpha1.ResourceBinding]{Framework: Default()}
	spec := appFailover(10, "a", "b")
	status := &workv1alpha1.ResourceBindingStatus{AggregatedStatus: []workv1alpha1.AggregatedStatusItem{
		health("a", workv1alpha1.ResourceHealthy, now.Add(-time.Hour)), health("b", workv1alpha1.ResourceUnhealthy, now.Add(-time.Minute))}}
	failed, _ := applicationFailures(spec, status, now)

	fleet := []clusterv1alpha1.Cluster{cluster("a", "eu"), cluster("b", "eu"), cluster("c", "eu")}
	res, acted, blocked, err := r.schedule(r.Framework, spec, status, fleet, nil, failed, now)
	if err != nil || blocked != "" || result(res.Clusters) != "a=2,c=2" || acted["b"] == "" {
		t.Fatalf("placed %s acted on %v blocked %q (%v), want a and c, b failed over", result(res.Clusters), acted, blocked, err)
	}
	want := workv1alpha1.ResourceBindingSpec{Clusters: spec.Clusters, Failover: spec.Failover}
	added := addEvictionTasks(&want, res.Clusters, res.Evicted, acted)
	if len(added) != 1 || added[0].FromCluster != "b" || added[0].Reason != ReasonApplicationFailure ||
		added[0].PurgeMode != policyv1alpha1.PurgeGracefully || *added[0].GracePeriodSeconds != 120 {
		t.Fatalf("eviction tasks %+v, want one ApplicationFailure task for b with a 120s grace", added)
	}

	// Only a and b exist and b failed: the binding keeps running on a alone (duplicated), which fits.
	res, _, blocked, err = r.schedule(r.Framework, spec, status, fleet[:2], nil, failed, now)
	if err != nil || blocked != "" || result(res.Clusters) != "a=2" {
		t.Fatalf("placed %s blocked %q (%v), want a only", result(res.Clusters), blocked, err)
	}

	// Only b exists: nowhere else to go, so nothing is evicted and the message says why.
	alone := appFailover(10, "b")
	res, acted, blocked, err = r.schedule(r.Framework, alone, status, fleet[1:2], nil, failed, now)
	if err != nil || len(acted) != 0 || result(res.Clusters) != "b=2" || !strings.Contains(blocked, "no other cluster can host it") {
		t.Fatalf("placed %s acted on %v blocked %q (%v), want b kept and a blocked failover", result(res.Clusters), acted, blocked, err)
	}
}

// TestEvictionCause: the events on the template name the cause in a few words.
func TestEvictionCause(t *testing.T) {
	for _, tt := range []struct {
		task workv1alpha1.GracefulEvictionTask
		want string
	}{
		{workv1alpha1.GracefulEvictionTask{Reason: ReasonTaintUntolerated, Message: "the cluster has the taint " + clusterv1alpha1.TaintClusterUnreachable + ":NoExecute tolerated only for 20s"}, "cluster unreachable"},
		{workv1alpha1.GracefulEvictionTask{Reason: ReasonTaintUntolerated, Message: "the cluster has the untolerated taint " + clusterv1alpha1.TaintClusterNotReady + ":NoExecute"}, "cluster not ready"},
		{workv1alpha1.GracefulEvictionTask{Reason: ReasonTaintUntolerated, Message: "the cluster has the untolerated taint maintenance:NoExecute"}, "the cluster has the untolerated taint maintenance:NoExecute"},
		{workv1alpha1.GracefulEvictionTask{Reason: ReasonApplicationFailure, Message: "unhealthy"}, "application unhealthy"},
		{workv1alpha1.GracefulEvictionTask{Reason: ReasonPlacementChanged}, "placement changed"},
	} {
		if got := evictionCause(tt.task); got != tt.want {
			t.Errorf("%s %q: %q, want %q", tt.task.Reason, tt.task.Message, got, tt.want)
		}
	}
}
