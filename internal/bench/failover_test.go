package bench

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/bench/measure"
)

func TestFailoverOptionsValidate(t *testing.T) {
	valid := func() FailoverOptions {
		return FailoverOptions{Members: 3, Objects: 10, Replicas: 2, GracePeriod: 20 * time.Second, Toleration: 20 * time.Second,
			Timeout: time.Minute}
	}
	tests := []struct {
		name   string
		change func(o *FailoverOptions)
		want   string
	}{
		{"valid", func(*FailoverOptions) {}, ""},
		{"two members", func(o *FailoverOptions) { o.Members = 2 }, ""},
		{"one member", func(o *FailoverOptions) { o.Members = 1 }, "--members 1: must be between 2 and 20"},
		{"too many members", func(o *FailoverOptions) { o.Members = 21 }, "--members 21"},
		{"no objects", func(o *FailoverOptions) { o.Objects = 0 }, "--objects 0: must be at least 1"},
		{"no replicas", func(o *FailoverOptions) { o.Replicas = 0 }, "--replicas 0"},
		{"no grace period", func(o *FailoverOptions) { o.GracePeriod = 0 }, "--cluster-grace-period 0s: must be at least 20s"},
		{"grace period below the hub's minimum", func(o *FailoverOptions) { o.GracePeriod = 10 * time.Second }, "--cluster-grace-period 10s"},
		{"no toleration", func(o *FailoverOptions) { o.Toleration = 0 }, "--toleration 0s: must be a positive whole number of seconds"},
		{"negative toleration", func(o *FailoverOptions) { o.Toleration = -time.Second }, "--toleration -1s"},
		{"fractional toleration", func(o *FailoverOptions) { o.Toleration = 1500 * time.Millisecond }, "--toleration 1.5s"},
		{"no timeout", func(o *FailoverOptions) { o.Timeout = 0 }, "--timeout 0s: must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := valid()
			tt.change(&o)
			err := o.Validate()
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
}

// The moves mark a stage only once the object reached it after the freeze, and read nothing stale as done:
// a Healthy condition or a template status of the placement before the move counts for nothing.
func TestMoves(t *testing.T) {
	rec := measure.NewRecorder()
	m := newMoves("member1", 2, rec)
	binding := func(generation, healthyAt int64, targets ...workv1alpha1.TargetCluster) {
		status := &workv1alpha1.ResourceBindingStatus{Conditions: []metav1.Condition{{Type: workv1alpha1.ConditionHealthy,
			Status: metav1.ConditionTrue, ObservedGeneration: healthyAt}}}
		m.binding("a", &workv1alpha1.ResourceBindingSpec{Clusters: targets}, status, generation, false)
	}
	member := func(cluster string, replicas, available int32) {
		m.member("a", cluster, &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas)},
			Status: appsv1.DeploymentStatus{AvailableReplicas: available}}, false)
	}
	reached := func(stage string) bool { return rec.Reached(stage, "a", []string{""}) }
	taint := func(effect corev1.TaintEffect) {
		m.cluster(&clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1"},
			Spec: clusterv1alpha1.ClusterSpec{Taints: []corev1.Taint{{Key: clusterv1alpha1.TaintClusterUnreachable, Effect: effect}}}})
	}

	if ok, _ := m.ready([]string{"a"}); ok {
		t.Fatal("ready before anything was placed")
	}
	binding(1, 1, workv1alpha1.TargetCluster{Name: "member1", Replicas: 1}, workv1alpha1.TargetCluster{Name: "member2", Replicas: 1})
	m.template("a", &appsv1.DeploymentStatus{AvailableReplicas: 2, UpdatedReplicas: 2})
	member("member2", 1, 0)
	if ok, _ := m.ready([]string{"a"}); ok {
		t.Fatal("ready before member2's watch showed its replica available")
	}
	member("member2", 1, 1)
	if ok, surviving := m.ready([]string{"a"}); !ok || surviving != 1 {
		t.Fatalf("ready() = %v, %d; want true, 1 replica outside member1", ok, surviving)
	}

	// Before the freeze, a placement without member1 marks nothing: the failover has not begun.
	taint(corev1.TaintEffectNoExecute)
	if !m.tainted().IsZero() {
		t.Error("a taint before the freeze was taken for the failover's")
	}
	m.begin([]string{"a"})
	taint(corev1.TaintEffectNoSchedule)
	if !m.tainted().IsZero() {
		t.Error("a NoSchedule taint was taken for the NoExecute one")
	}
	taint(corev1.TaintEffectNoExecute)
	if m.tainted().IsZero() {
		t.Error("the NoExecute taint was not seen")
	}
	if reached(stageRescheduled) {
		t.Fatal("rescheduled while the placement still holds member1")
	}

	// The scheduler moves member1's replica to member3; the Healthy condition and the template's status
	// still speak of the old placement.
	binding(2, 1, workv1alpha1.TargetCluster{Name: "member2", Replicas: 1}, workv1alpha1.TargetCluster{Name: "member3", Replicas: 1})
	if !reached(stageRescheduled) {
		t.Fatal("not rescheduled after the placement left member1")
	}
	if reached(stageReplacementApplied) || reached(stageReplacementAvailable) {
		t.Fatal("replacement applied or available before member3 ran anything, from the old placement's status")
	}
	member("member3", 1, 0)
	if !reached(stageReplacementApplied) {
		t.Fatal("not applied once every cluster of the new placement runs its replicas")
	}
	member("member2", 1, 0) // a dip the members' watches show, however short
	member("member2", 1, 1)
	member("member3", 1, 1)
	if reached(stageReplacementAvailable) {
		t.Fatal("available before the hub's Healthy condition observed the new placement")
	}
	binding(2, 2, workv1alpha1.TargetCluster{Name: "member2", Replicas: 1}, workv1alpha1.TargetCluster{Name: "member3", Replicas: 1})
	if m.hubEarly() != 0 {
		t.Errorf("hubEarly() = %d, want 0: the hub spoke once the members ran the replacement", m.hubEarly())
	}
	if !reached(stageReplacementAvailable) {
		t.Fatal("not available once Healthy at the new generation with the template's status in full")
	}
	if least := m.stopTracking(); least != 0 {
		t.Errorf("stopTracking() = %d, want 0: member2's replica was unavailable for a moment", least)
	}
	member("member2", 1, 0)
	if least := m.stopTracking(); least != 0 {
		t.Errorf("stopTracking() = %d after tracking stopped, want 0 still", least)
	}
}

// The fewest available replicas start from what the live members run at the freeze.
func TestMovesLeastStartsAtTheFreeze(t *testing.T) {
	m := newMoves("member1", 2, measure.NewRecorder())
	m.member("a", "member2", &appsv1.Deployment{Status: appsv1.DeploymentStatus{AvailableReplicas: 0}}, false)
	m.member("a", "member2", &appsv1.Deployment{Status: appsv1.DeploymentStatus{AvailableReplicas: 1}}, false)
	m.member("a", "member1", &appsv1.Deployment{Status: appsv1.DeploymentStatus{AvailableReplicas: 1}}, false)
	m.begin([]string{"a"})
	if least := m.stopTracking(); least != 1 {
		t.Errorf("stopTracking() = %d, want 1: member2's replica, not the frozen member's, nor a dip before the freeze", least)
	}
}

// The hub's Healthy condition at the new generation, with the template's status in full, while a member
// still runs the old replica count (a Work status from before the move) is the hub's word, not the
// replacement: it is counted as early, and the replacement is available only once the member runs it.
func TestMovesHubHealthyBeforeTheMembers(t *testing.T) {
	rec := measure.NewRecorder()
	m := newMoves("member1", 2, rec)
	m.member("a", "member2", &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)},
		Status: appsv1.DeploymentStatus{AvailableReplicas: 1}}, false)
	m.template("a", &appsv1.DeploymentStatus{AvailableReplicas: 2, UpdatedReplicas: 2})
	m.begin([]string{"a"})
	healthy := &workv1alpha1.ResourceBindingStatus{Conditions: []metav1.Condition{{Type: workv1alpha1.ConditionHealthy,
		Status: metav1.ConditionTrue, ObservedGeneration: 2}}}
	m.binding("a", &workv1alpha1.ResourceBindingSpec{Clusters: []workv1alpha1.TargetCluster{{Name: "member2", Replicas: 2}}}, healthy, 2, false)
	if !rec.Reached(stageHubHealthy, "a", []string{""}) || rec.Reached(stageReplacementAvailable, "a", []string{""}) {
		t.Fatal("want hubHealthy and not replacementAvailable while member2 runs 1 of its 2 replicas")
	}
	if m.hubEarly() != 1 {
		t.Errorf("hubEarly() = %d, want 1", m.hubEarly())
	}
	m.member("a", "member2", &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)},
		Status: appsv1.DeploymentStatus{AvailableReplicas: 1}}, false)
	if rec.Reached(stageReplacementAvailable, "a", []string{""}) {
		t.Fatal("available with 1 of member2's 2 replicas available")
	}
	m.member("a", "member2", &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)},
		Status: appsv1.DeploymentStatus{AvailableReplicas: 2}}, false)
	if !rec.Reached(stageReplacementAvailable, "a", []string{""}) {
		t.Fatal("not available once member2 runs its 2 replicas")
	}
	if m.hubEarly() != 1 {
		t.Errorf("hubEarly() = %d, want still 1", m.hubEarly())
	}
}

// A scale-up of a cluster already in the placement is applied only when the member runs the new count.
func TestMovesAppliedNeedsTheNewReplicaCount(t *testing.T) {
	rec := measure.NewRecorder()
	m := newMoves("member1", 2, rec)
	m.member("a", "member2", &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)}}, false)
	m.begin([]string{"a"})
	m.binding("a", &workv1alpha1.ResourceBindingSpec{Clusters: []workv1alpha1.TargetCluster{{Name: "member2", Replicas: 2}}},
		&workv1alpha1.ResourceBindingStatus{}, 2, false)
	if rec.Reached(stageReplacementApplied, "a", []string{""}) {
		t.Fatal("applied while member2 still runs 1 of its 2 replicas")
	}
	m.member("a", "member2", &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)}}, false)
	if !rec.Reached(stageReplacementApplied, "a", []string{""}) {
		t.Fatal("not applied once member2 runs 2")
	}
}
