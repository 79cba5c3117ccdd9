package interpreter

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

var (
	t0     = time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	yes    = metav1.Condition{Status: metav1.ConditionTrue}
	notYet = metav1.Condition{Status: metav1.ConditionFalse, Reason: "NotHealthy", Message: "not healthy yet in m2"}
)

// deployStatus is a member Deployment's status: replicas, updated, ready, available, and the Available and
// Progressing conditions the Deployment controller would set.
func deployStatus(t *testing.T, replicas, updated, ready, available int, progressing string) map[string]any {
	availableStatus := "True"
	if available < updated || available < replicas && updated == replicas {
		availableStatus = "False"
	}
	progressingStatus := "True"
	if progressing == "ProgressDeadlineExceeded" {
		progressingStatus = "False"
	}
	return obj(t, fmt.Sprintf(`{"observedGeneration":2,"replicas":%d,"updatedReplicas":%d,"readyReplicas":%d,"availableReplicas":%d,
		"conditions":[{"type":"Available","status":%q},{"type":"Progressing","status":%q,"reason":%q}]}`,
		replicas, updated, ready, available, availableStatus, progressingStatus, progressing)).Object
}

func members(statuses ...map[string]any) []Member {
	out := make([]Member, len(statuses))
	for i, s := range statuses {
		out[i] = Member{Cluster: fmt.Sprintf("m%d", i+1), Status: s}
	}
	return out
}

func TestAggregateStatusCounters(t *testing.T) {
	deployment := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"generation":2},"spec":{"replicas":%d}}`
	tests := []struct {
		name    string
		fleet   Fleet
		replica int
		want    map[string]int64
	}{
		{"Duplicated, rolled out in three clusters: spec-shaped, not 9 for 3", Fleet{Members: members(
			deployStatus(t, 3, 3, 3, 3, "NewReplicaSetAvailable"), deployStatus(t, 3, 3, 3, 3, "NewReplicaSetAvailable"),
			deployStatus(t, 3, 3, 3, 3, "NewReplicaSetAvailable"))}, 3,
			map[string]int64{"replicas": 3, "updatedReplicas": 3, "readyReplicas": 3, "availableReplicas": 3}},
		{"Duplicated, one cluster rolling: the most replicas, the least progress", Fleet{Members: members(
			deployStatus(t, 3, 3, 3, 3, "NewReplicaSetAvailable"), deployStatus(t, 4, 1, 3, 3, "ReplicaSetUpdated"),
			deployStatus(t, 3, 3, 3, 3, "NewReplicaSetAvailable"))}, 3,
			map[string]int64{"replicas": 4, "updatedReplicas": 1, "readyReplicas": 3, "availableReplicas": 3}},
		{"Duplicated, a cluster not reported yet counts as none", Fleet{Members: append(members(
			deployStatus(t, 3, 3, 3, 3, "NewReplicaSetAvailable")), Member{Cluster: "m9"})}, 3,
			map[string]int64{"replicas": 3, "updatedReplicas": 0, "readyReplicas": 0, "availableReplicas": 0}},
		{"Divided 1/2/3: the fleet's sums", Fleet{Divided: true, Members: members(
			deployStatus(t, 1, 1, 1, 1, "NewReplicaSetAvailable"), deployStatus(t, 2, 2, 2, 1, "NewReplicaSetAvailable"),
			deployStatus(t, 3, 3, 3, 3, "NewReplicaSetAvailable"))}, 6,
			map[string]int64{"replicas": 6, "updatedReplicas": 6, "readyReplicas": 6, "availableReplicas": 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := AggregateStatus(obj(t, fmt.Sprintf(deployment, tt.replica)), tt.fleet)
			for f, want := range tt.want {
				if got[f] != want {
					t.Errorf("%s = %v, want %d", f, got[f], want)
				}
			}
		})
	}
	ds := obj(t, `{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"generation":1}}`)
	if got := AggregateStatus(ds, Fleet{Members: members(obj(t, `{"numberReady":2}`).Object, obj(t, `{"numberReady":5}`).Object)}); got["numberReady"] != int64(7) {
		t.Errorf("a DaemonSet's spec counts no replicas, so its counters are summed: numberReady = %v", got["numberReady"])
	}
	if AggregateStatus(obj(t, `{"apiVersion":"v1","kind":"ConfigMap"}`), Fleet{}) != nil {
		t.Fatal("a ConfigMap has no status to aggregate")
	}
}

func TestAggregateStatusObservedGeneration(t *testing.T) {
	template := obj(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"generation":5}}`)
	fleet := Fleet{Members: members(deployStatus(t, 1, 1, 1, 1, "NewReplicaSetAvailable"))}
	if _, ok := AggregateStatus(template, fleet)["observedGeneration"]; ok {
		t.Fatal("observedGeneration set although a member has not caught up")
	}
	fleet.CaughtUp = true
	if got := AggregateStatus(template, fleet); got["observedGeneration"] != int64(5) {
		t.Fatalf("observedGeneration = %v, want the template's generation", got["observedGeneration"])
	}
}

// conditionOf returns type → "status/reason" of a status's conditions.
func conditionsOf(status map[string]any) map[string]string {
	out := map[string]string{}
	list, _, _ := unstructured.NestedSlice(status, "conditions")
	for _, c := range list {
		m := c.(map[string]any)
		out[m["type"].(string)] = fmt.Sprintf("%s/%s", m["status"], m["reason"])
	}
	return out
}

func TestAggregateStatusDeploymentConditions(t *testing.T) {
	done := deployStatus(t, 3, 3, 3, 3, "NewReplicaSetAvailable")
	tests := []struct {
		name  string
		fleet Fleet
		want  map[string]string
	}{
		{"rolled out and healthy everywhere", Fleet{Members: members(done, done, done), CaughtUp: true, Applied: yes, Healthy: yes},
			map[string]string{"Available": "True/MinimumReplicasAvailable", "Progressing": "True/NewReplicaSetAvailable",
				workv1alpha1.TemplateConditionPropagated: "True/Propagated"}},
		{"one cluster rolling", Fleet{Members: members(done, deployStatus(t, 4, 1, 3, 3, "ReplicaSetUpdated"), done), CaughtUp: true, Applied: yes, Healthy: notYet},
			map[string]string{"Available": "True/MinimumReplicasAvailable", "Progressing": "True/ReplicaSetUpdated",
				workv1alpha1.TemplateConditionPropagated: "False/NotHealthy"}},
		{"one cluster below minimum availability", Fleet{Members: members(done, deployStatus(t, 3, 3, 1, 1, "NewReplicaSetAvailable"), done), CaughtUp: true, Applied: yes, Healthy: notYet},
			map[string]string{"Available": "False/MinimumReplicasUnavailable", "Progressing": "True/NewReplicaSetAvailable"}},
		{"one cluster past its progress deadline", Fleet{Members: members(done, deployStatus(t, 4, 1, 3, 3, "ProgressDeadlineExceeded"), done), CaughtUp: true, Applied: yes, Healthy: notYet},
			map[string]string{"Progressing": "False/ProgressDeadlineExceeded"}},
		{"a member still on the old generation", Fleet{Members: members(done, done, done), CaughtUp: false, Applied: yes, Healthy: yes},
			map[string]string{"Progressing": "True/ReplicaSetUpdated", workv1alpha1.TemplateConditionPropagated: "False/Updating"}},
		{"not applied everywhere", Fleet{Members: members(done), CaughtUp: false, Applied: metav1.Condition{Status: metav1.ConditionFalse, Reason: "NotApplied", Message: "not applied yet in m2"}, Healthy: yes},
			map[string]string{workv1alpha1.TemplateConditionPropagated: "False/NotApplied"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.fleet.Now = t0
			got := conditionsOf(AggregateStatus(obj(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"generation":2},"spec":{"replicas":3}}`), tt.fleet))
			for c, want := range tt.want {
				if got[c] != want {
					t.Errorf("%s = %q, want %q (all: %v)", c, got[c], want, got)
				}
			}
		})
	}
}

// TestAggregateStatusStable: an unchanged fleet gives the template's status back exactly, timestamps
// included, so the hub writes nothing; a changed condition gets a new lastTransitionTime.
func TestAggregateStatusStable(t *testing.T) {
	done := deployStatus(t, 3, 3, 3, 3, "NewReplicaSetAvailable")
	template := obj(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"generation":2},"spec":{"replicas":3}}`)
	fleet := Fleet{Members: members(done, done), CaughtUp: true, Applied: yes, Healthy: yes, Now: t0}
	first := AggregateStatus(template, fleet)
	template.Object["status"] = first
	fleet.Now = t0.Add(time.Hour)
	second := AggregateStatus(template, fleet)
	if fmt.Sprint(first) != fmt.Sprint(second) {
		t.Fatalf("unchanged fleet changed the status:\n%v\n%v", first, second)
	}
	fleet.Members = members(done, deployStatus(t, 3, 3, 1, 1, "NewReplicaSetAvailable"))
	third := AggregateStatus(template, fleet)
	for _, c := range third["conditions"].([]any) {
		c := c.(map[string]any)
		wantTime := t0.Format(time.RFC3339)
		if c["type"] == "Available" {
			wantTime = fleet.Now.Format(time.RFC3339)
		}
		if c["lastTransitionTime"] != wantTime {
			t.Errorf("%s: lastTransitionTime %v, want %s", c["type"], c["lastTransitionTime"], wantTime)
		}
	}
}

func TestAggregateStatusJob(t *testing.T) {
	template := `{"apiVersion":"batch/v1","kind":"Job","metadata":{"generation":1},"spec":{"parallelism":6,"completions":6}%s}`
	running := func(active int) map[string]any {
		return obj(t, fmt.Sprintf(`{"active":%d,"ready":%d,"startTime":"2026-12-01T02:00:00Z"}`, active, active)).Object
	}
	complete := func(succeeded int, at string) map[string]any {
		return obj(t, fmt.Sprintf(`{"succeeded":%d,"startTime":"2026-12-01T02:00:00Z","completionTime":%q,"conditions":[
			{"type":"SuccessCriteriaMet","status":"True"},{"type":"Complete","status":"True","reason":"CompletionsReached"}]}`, succeeded, at)).Object
	}
	failed := obj(t, `{"failed":7,"startTime":"2026-12-01T01:59:00Z","conditions":[{"type":"FailureTarget","status":"True"},
		{"type":"Failed","status":"True","reason":"BackoffLimitExceeded","message":"Job has reached the specified backoff limit"}]}`).Object

	t.Run("divided, still running", func(t *testing.T) {
		got := AggregateStatus(obj(t, fmt.Sprintf(template, "")), Fleet{Divided: true, Now: t0, Members: members(complete(1, "2026-12-01T02:01:00Z"), running(2), running(3))})
		if got["active"] != int64(5) || got["succeeded"] != int64(1) || got["startTime"] != "2026-12-01T02:00:00Z" {
			t.Fatalf("status %v", got)
		}
		if c := conditionsOf(got); c["Complete"] != "" || c["Failed"] != "" {
			t.Fatalf("conditions %v while clusters still run", c)
		}
		if _, ok := got["observedGeneration"]; ok {
			t.Fatal("a Job's status has no observedGeneration")
		}
	})
	t.Run("divided, completed everywhere: the template's completions, Complete", func(t *testing.T) {
		got := AggregateStatus(obj(t, fmt.Sprintf(template, "")), Fleet{Divided: true, Now: t0, Members: members(
			complete(1, "2026-12-01T02:01:00Z"), complete(2, "2026-12-01T02:03:00Z"), complete(3, "2026-12-01T02:02:00Z"))})
		c := conditionsOf(got)
		if got["succeeded"] != int64(6) || got["active"] != int64(0) || c["Complete"] != "True/CompletionsReached" ||
			c["SuccessCriteriaMet"] != "True/CompletionsReached" || got["completionTime"] != "2026-12-01T02:03:00Z" {
			t.Fatalf("status %v", got)
		}
	})
	t.Run("failed in one cluster while another runs: FailureTarget, then Failed once nothing runs", func(t *testing.T) {
		got := AggregateStatus(obj(t, fmt.Sprintf(template, "")), Fleet{Divided: true, Now: t0, Members: members(failed, running(2), complete(3, "2026-12-01T02:02:00Z"))})
		if c := conditionsOf(got); c["FailureTarget"] != "True/BackoffLimitExceeded" || c["Failed"] != "" || c["Complete"] != "" {
			t.Fatalf("conditions %v", c)
		}
		got = AggregateStatus(obj(t, fmt.Sprintf(template, "")), Fleet{Divided: true, Now: t0, Members: members(failed, complete(2, "2026-12-01T02:02:00Z"), complete(3, "2026-12-01T02:02:00Z"))})
		if c := conditionsOf(got); c["Failed"] != "True/BackoffLimitExceeded" || got["startTime"] != "2026-12-01T01:59:00Z" {
			t.Fatalf("conditions %v, status %v", c, got)
		}
	})
	t.Run("the failed cluster left the placement: FailureTarget goes False, so Complete is accepted", func(t *testing.T) {
		hub := obj(t, fmt.Sprintf(template, `,"status":{"startTime":"2026-12-01T02:00:00Z","conditions":[{"type":"FailureTarget","status":"True","reason":"BackoffLimitExceeded"}]}`))
		got := AggregateStatus(hub, Fleet{Divided: true, Now: t0, Members: members(complete(3, "2026-12-01T02:02:00Z"), complete(3, "2026-12-01T02:03:00Z"))})
		if c := conditionsOf(got); c["FailureTarget"] != "False/FailedClusterLeft" || c["Complete"] != "True/CompletionsReached" {
			t.Fatalf("conditions %v", c)
		}
	})
	t.Run("counters never go down, a finished Job stays finished", func(t *testing.T) {
		hub := obj(t, fmt.Sprintf(template, `,"status":{"succeeded":6,"failed":1,"startTime":"2026-12-01T02:00:00Z","completionTime":"2026-12-01T02:03:00Z",
			"conditions":[{"type":"Complete","status":"True","reason":"CompletionsReached"}]}`))
		got := AggregateStatus(hub, Fleet{Divided: true, Now: t0, Members: members(running(2))})
		if got["succeeded"] != int64(6) || got["active"] != nil || conditionsOf(got)["Complete"] != "True/CompletionsReached" {
			t.Fatalf("status %v", got)
		}
		hub = obj(t, fmt.Sprintf(template, `,"status":{"succeeded":4,"failed":2}`))
		got = AggregateStatus(hub, Fleet{Divided: true, Now: t0, Members: members(running(1))})
		if got["succeeded"] != int64(4) || got["failed"] != int64(2) {
			t.Fatalf("status %v: counters went down", got)
		}
	})
}

func TestShareCompletions(t *testing.T) {
	division := []workv1alpha1.TargetCluster{{Name: "m1", Replicas: 1}, {Name: "m2", Replicas: 2}, {Name: "m3", Replicas: 3}}
	tests := []struct {
		spec string
		want []int64 // per cluster; -1: no completions
	}{
		{`{"parallelism":6,"completions":6}`, []int64{1, 2, 3}},
		{`{"parallelism":6,"completions":10}`, []int64{1, 4, 5}},
		{`{"parallelism":6,"completions":2}`, []int64{0, 1, 1}},
		{`{"parallelism":6}`, []int64{-1, -1, -1}},
		{`{"parallelism":6,"completions":6,"completionMode":"Indexed"}`, []int64{6, 6, 6}},
	}
	for _, tt := range tests {
		var got []int64
		var sum int64
		for _, target := range division {
			job := obj(t, `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j"},"spec":`+tt.spec+`}`)
			ShareCompletions(job, target.Name, division)
			n, found, _ := unstructured.NestedInt64(job.Object, "spec", "completions")
			if !found {
				n = -1
			}
			got, sum = append(got, n), sum+n
		}
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("%s: completions %v, want %v", tt.spec, got, tt.want)
		}
		if want, ok, _ := unstructured.NestedInt64(obj(t, tt.spec).Object, "completions"); ok && !strings.Contains(tt.spec, "Indexed") && sum != want {
			t.Errorf("%s: the shares add up to %d", tt.spec, sum)
		}
	}
	zero := []workv1alpha1.TargetCluster{{Name: "m1"}, {Name: "m2"}}
	job := obj(t, `{"apiVersion":"batch/v1","kind":"Job","spec":{"parallelism":0,"completions":3}}`)
	ShareCompletions(job, "m2", zero)
	if n, _, _ := unstructured.NestedInt64(job.Object, "spec", "completions"); n != 2 {
		t.Errorf("a paused Job's completions are shared by cluster: m2 got %d, want 2", n)
	}
	if err := Divisible(obj(t, `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j"},"spec":{"completionMode":"Indexed"}}`)); err == nil {
		t.Error("an Indexed Job was found divisible")
	}
	if err := Divisible(obj(t, `{"apiVersion":"batch/v1","kind":"Job","spec":{"completions":3}}`)); err != nil {
		t.Errorf("a non-indexed Job: %v", err)
	}
}
