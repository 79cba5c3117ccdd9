package interpreter

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// argoHealth assesses a hub template as Argo CD does. Argo CD's health package (gitops-engine's pkg/health)
// does not build with this module graph: its newest version imports the autoscaling/v2beta1 and v2beta2
// APIs, which k8s.io/api no longer has. The rules below are the ones Argo CD documents
// (https://argo-cd.readthedocs.io/en/stable/operator-manual/health/): Deployment, ReplicaSet, StatefulSet
// and DaemonSet are healthy when the observed generation equals the desired one and the updated replicas
// equal the desired replicas, with the rollout checks of `kubectl rollout status` that Argo CD applies
// (a progress deadline exceeded is Degraded; old replicas still running, or updated ones not yet available,
// are Progressing); a Job is Healthy once Complete, Degraded once Failed, Progressing before.
func argoHealth(t *testing.T, u *unstructured.Unstructured) string {
	t.Helper()
	num := func(path ...string) int64 { v, _, _ := unstructured.NestedInt64(u.Object, path...); return v }
	generation, observed := u.GetGeneration(), num("status", "observedGeneration")
	want := num("spec", "replicas")
	if _, ok, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "replicas"); !ok {
		want = 1
	}
	switch u.GetKind() {
	case "Deployment":
		switch {
		case generation > observed:
			return "Progressing"
		case conditionIn(u.Object["status"].(map[string]any), "Progressing")["reason"] == "ProgressDeadlineExceeded":
			return "Degraded"
		case num("status", "updatedReplicas") < want, num("status", "replicas") > num("status", "updatedReplicas"),
			num("status", "availableReplicas") < num("status", "updatedReplicas"):
			return "Progressing"
		}
		return "Healthy"
	case "StatefulSet":
		partition, _, _ := unstructured.NestedInt64(u.Object, "spec", "updateStrategy", "rollingUpdate", "partition")
		switch {
		case observed == 0 || generation > observed, num("status", "readyReplicas") < want,
			num("status", "updatedReplicas") < want-partition:
			return "Progressing"
		}
		return "Healthy"
	case "Job":
		st, _ := u.Object["status"].(map[string]any)
		switch {
		case conditionIn(st, "Failed") != nil:
			return "Degraded"
		case conditionIn(st, "Complete") != nil:
			return "Healthy"
		}
		return "Progressing"
	}
	t.Fatalf("no Argo CD rule for %s", u.GetKind())
	return ""
}

// hubTemplate is the template as the hub serves it once its status was aggregated from the members.
func hubTemplate(t *testing.T, doc string, fleet Fleet) *unstructured.Unstructured {
	t.Helper()
	u := obj(t, doc)
	fleet.Now = t0
	u.Object["status"] = AggregateStatus(u, fleet)
	return u
}

func kstatus(t *testing.T, u *unstructured.Unstructured) status.Status {
	t.Helper()
	res, err := status.Compute(u)
	if err != nil {
		t.Fatal(err)
	}
	return res.Status
}

// gitopsCase is one state of a fleet and what Flux (kstatus) and Argo CD must make of the hub's template.
type gitopsCase struct {
	name    string
	fleet   Fleet
	kstatus status.Status
	argo    string
}

func checkGitOps(t *testing.T, template string, cases []gitopsCase) {
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			u := hubTemplate(t, template, tt.fleet)
			if got := kstatus(t, u); got != tt.kstatus {
				t.Errorf("kstatus %s, want %s; status %v", got, tt.kstatus, u.Object["status"])
			}
			if got := argoHealth(t, u); got != tt.argo {
				t.Errorf("Argo CD health %s, want %s; status %v", got, tt.argo, u.Object["status"])
			}
		})
	}
}

// TestGitOpsDeployment: a Deployment Duplicated over three clusters (3 replicas each) and Divided (6 as
// 1/2/3) reads InProgress/Progressing during a rollout, Current/Healthy once rolled out everywhere, and
// neither once one member is unhealthy. Summed, the Duplicated one's 9 replicas for a spec of 3 read as
// 6 pods pending termination: never Current.
func TestGitOpsDeployment(t *testing.T) {
	const duplicated = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","generation":2},
		"spec":{"replicas":3,"progressDeadlineSeconds":600}}`
	done := deployStatus(t, 3, 3, 3, 3, "NewReplicaSetAvailable")
	checkGitOps(t, duplicated, []gitopsCase{
		{"duplicated: rolling out in one cluster", Fleet{CaughtUp: true, Applied: yes, Healthy: notYet,
			Members: members(done, deployStatus(t, 4, 1, 3, 3, "ReplicaSetUpdated"), done)}, status.InProgressStatus, "Progressing"},
		{"duplicated: a cluster not on the new generation yet", Fleet{CaughtUp: false, Applied: yes, Healthy: yes,
			Members: members(done, done, done)}, status.InProgressStatus, "Progressing"},
		{"duplicated: rolled out everywhere", Fleet{CaughtUp: true, Applied: yes, Healthy: yes,
			Members: members(done, done, done)}, status.CurrentStatus, "Healthy"},
		{"duplicated: one member lost a pod", Fleet{CaughtUp: true, Applied: yes, Healthy: notYet,
			Members: members(done, deployStatus(t, 3, 3, 2, 2, "NewReplicaSetAvailable"), done)}, status.InProgressStatus, "Progressing"},
		{"duplicated: one member past its progress deadline", Fleet{CaughtUp: true, Applied: yes, Healthy: notYet,
			Members: members(done, deployStatus(t, 4, 1, 3, 3, "ProgressDeadlineExceeded"), done)}, status.FailedStatus, "Degraded"},
	})
	const divided = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","generation":2},
		"spec":{"replicas":6,"progressDeadlineSeconds":600}}`
	checkGitOps(t, divided, []gitopsCase{
		{"divided: rolling out in one cluster", Fleet{Divided: true, CaughtUp: true, Applied: yes, Healthy: notYet, Members: members(
			deployStatus(t, 1, 1, 1, 1, "NewReplicaSetAvailable"), deployStatus(t, 3, 1, 2, 2, "ReplicaSetUpdated"),
			deployStatus(t, 3, 3, 3, 3, "NewReplicaSetAvailable"))}, status.InProgressStatus, "Progressing"},
		{"divided: rolled out everywhere", Fleet{Divided: true, CaughtUp: true, Applied: yes, Healthy: yes, Members: members(
			deployStatus(t, 1, 1, 1, 1, "NewReplicaSetAvailable"), deployStatus(t, 2, 2, 2, 2, "NewReplicaSetAvailable"),
			deployStatus(t, 3, 3, 3, 3, "NewReplicaSetAvailable"))}, status.CurrentStatus, "Healthy"},
		{"divided: one member unhealthy", Fleet{Divided: true, CaughtUp: true, Applied: yes, Healthy: notYet, Members: members(
			deployStatus(t, 1, 1, 1, 1, "NewReplicaSetAvailable"), deployStatus(t, 2, 2, 1, 1, "NewReplicaSetAvailable"),
			deployStatus(t, 3, 3, 3, 3, "NewReplicaSetAvailable"))}, status.InProgressStatus, "Progressing"},
	})

	t.Run("summed, a duplicated Deployment is never Current", func(t *testing.T) {
		u := obj(t, duplicated)
		u.Object["status"] = AggregateStatus(u, Fleet{Divided: true, CaughtUp: true, Applied: yes, Healthy: yes, Now: t0, Members: members(done, done, done)})
		if got := kstatus(t, u); got == status.CurrentStatus {
			t.Fatalf("kstatus %s for the sums %v", got, u.Object["status"])
		}
	})
}

// TestGitOpsStatefulSet: a StatefulSet Duplicated over three clusters.
func TestGitOpsStatefulSet(t *testing.T) {
	const sts = `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"db","generation":3},
		"spec":{"replicas":3,"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":0}}}}`
	member := func(replicas, ready, current, updated int) map[string]any {
		return obj(t, fmt.Sprintf(`{"observedGeneration":3,"replicas":%d,"readyReplicas":%d,"availableReplicas":%d,"currentReplicas":%d,"updatedReplicas":%d}`,
			replicas, ready, ready, current, updated)).Object
	}
	done := member(3, 3, 3, 3)
	checkGitOps(t, sts, []gitopsCase{
		{"rolling out in one cluster", Fleet{CaughtUp: true, Applied: yes, Healthy: notYet, Members: members(done, member(3, 2, 1, 2), done)},
			status.InProgressStatus, "Progressing"},
		{"rolled out everywhere", Fleet{CaughtUp: true, Applied: yes, Healthy: yes, Members: members(done, done, done)},
			status.CurrentStatus, "Healthy"},
		{"one member not ready", Fleet{CaughtUp: true, Applied: yes, Healthy: notYet, Members: members(done, done, member(3, 2, 3, 3))},
			status.InProgressStatus, "Progressing"},
	})
}

// TestGitOpsJob: a Job with 6 completions divided 1/2/3. kstatus calls a started Job Current (it judges
// whether a Job runs, not whether it finished); a Job that failed in one cluster is Failed/Degraded.
func TestGitOpsJob(t *testing.T) {
	const job = `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"batch","generation":1},"spec":{"parallelism":6,"completions":6}}`
	pending := obj(t, `{}`).Object
	running := obj(t, `{"active":2,"startTime":"2026-12-01T02:00:00Z"}`).Object
	complete := func(n int) map[string]any {
		return obj(t, fmt.Sprintf(`{"succeeded":%d,"startTime":"2026-12-01T02:00:00Z","completionTime":"2026-12-01T02:05:00Z",
			"conditions":[{"type":"SuccessCriteriaMet","status":"True"},{"type":"Complete","status":"True","reason":"CompletionsReached"}]}`, n)).Object
	}
	failed := obj(t, `{"failed":7,"startTime":"2026-12-01T02:00:00Z","conditions":[{"type":"FailureTarget","status":"True","reason":"BackoffLimitExceeded"},
		{"type":"Failed","status":"True","reason":"BackoffLimitExceeded"}]}`).Object
	checkGitOps(t, job, []gitopsCase{
		{"not started anywhere", Fleet{Divided: true, CaughtUp: true, Applied: yes, Healthy: yes, Members: members(pending, pending, pending)},
			status.InProgressStatus, "Progressing"},
		{"running in two clusters, done in one", Fleet{Divided: true, CaughtUp: true, Applied: yes, Healthy: yes, Members: members(complete(1), running, running)},
			status.CurrentStatus, "Progressing"},
		{"completed everywhere", Fleet{Divided: true, CaughtUp: true, Applied: yes, Healthy: yes, Members: members(complete(1), complete(2), complete(3))},
			status.CurrentStatus, "Healthy"},
		{"failed in one cluster", Fleet{Divided: true, CaughtUp: true, Applied: yes, Healthy: notYet, Members: members(complete(1), failed, complete(3))},
			status.FailedStatus, "Degraded"},
	})
}
