package interpreter

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	appsv1alpha1 "github.com/flotilla-io/flotilla/api/apps/v1alpha1"
)

// Fleet is what the hub knows of a template's copies when it writes the template's status.
type Fleet struct {
	// Members holds one entry per target cluster; Status is nil while that cluster has reported none.
	Members []Member
	// Divided says the template's replicas are shared among the clusters, so its spec counts the whole
	// fleet; otherwise every cluster runs the whole spec.
	Divided bool
	// CaughtUp says every target cluster applied the template's current generation and observed it.
	CaughtUp bool
	// Applied and Healthy are the binding's FullyApplied and Healthy conditions.
	Applied, Healthy metav1.Condition
	// Now stamps the conditions that change.
	Now time.Time
	// Schema says what the status of a customized kind takes of the fields the hub adds (fleetstatus.go).
	Schema StatusSchema
	// Rendered is the binding's Rendered condition, for a template expanded on the hub (a HelmRelease); nil
	// before the render controller wrote one.
	Rendered *metav1.Condition
}

// Member is one target cluster's copy of a template.
type Member struct {
	Cluster string
	// Status is the member object's status as its cluster reported it.
	Status map[string]any
}

// fold says how a counter of a Duplicated template is folded over clusters. A Divided template's counters
// are always summed: its spec counts the fleet.
type fold int

const (
	// summed: the counter is summed for every placement (a DaemonSet's spec counts no replicas at all).
	summed fold = iota
	// lowest: progress (updated, ready, available, succeeded) counts only as far as every cluster got.
	lowest
	// highest: excess and trouble (replicas still running, unavailable, active, failed) count where most.
	highest
)

type counter struct {
	field      string
	duplicated fold
}

var (
	deploymentKind  = schema.GroupKind{Group: "apps", Kind: "Deployment"}
	statefulSetKind = schema.GroupKind{Group: "apps", Kind: "StatefulSet"}
	replicaSetKind  = schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}
	daemonSetKind   = schema.GroupKind{Group: "apps", Kind: "DaemonSet"}
	jobKind         = schema.GroupKind{Group: "batch", Kind: "Job"}
)

// counters are the status counters folded over clusters for a kind. The folds of a Duplicated template
// keep what the API server demands of a status (updated, ready and available never above replicas,
// available never above ready, a Job's ready never above active).
var counters = map[schema.GroupKind][]counter{
	deploymentKind: {{"replicas", highest}, {"updatedReplicas", lowest}, {"readyReplicas", lowest},
		{"availableReplicas", lowest}, {"unavailableReplicas", highest}},
	statefulSetKind: {{"replicas", highest}, {"updatedReplicas", lowest}, {"readyReplicas", lowest},
		{"availableReplicas", lowest}, {"currentReplicas", lowest}},
	replicaSetKind: {{"replicas", highest}, {"readyReplicas", lowest}, {"availableReplicas", lowest},
		{"fullyLabeledReplicas", lowest}},
	daemonSetKind: {{"currentNumberScheduled", summed}, {"desiredNumberScheduled", summed}, {"numberAvailable", summed},
		{"numberMisscheduled", summed}, {"numberReady", summed}, {"updatedNumberScheduled", summed}, {"numberUnavailable", summed}},
	jobKind: {{"active", highest}, {"succeeded", lowest}, {"failed", highest}, {"ready", highest}},
}

// AggregateStatus folds the member statuses of a built-in kind into the template's status, shaped like the
// template's spec, so that tools reading the hub's object (kubectl rollout status and wait, Argo CD, Flux's
// kstatus) judge the fleet as they would judge one cluster:
//   - Divided: the spec's replicas are the fleet's, so the counters are summed.
//   - Duplicated: the spec's replicas are every cluster's, so the counters say how far every cluster got:
//     progress (updated, ready, available, current, succeeded) is the lowest over the clusters, and what is
//     in excess or in trouble (replicas, unavailable, a Job's active and failed) the highest. Summing would
//     show 9 replicas for a spec of 3 on three clusters, which reads as 6 pods pending termination, and the
//     API server refuses any status whose ready or updated count exceeds its replicas.
//
// Kinds with replica-less specs (DaemonSet) are always summed. status.conditions carry the kind's own
// conditions folded over the clusters (see conditions.go) and the template condition
// flotilla.io/Propagated. observedGeneration is set to the template's generation only when the fleet caught
// up. It returns nil for kinds without aggregation.
func AggregateStatus(template *unstructured.Unstructured, fleet Fleet) map[string]any {
	gk := template.GroupVersionKind().GroupKind()
	if gk == appsv1alpha1.HelmReleaseKind {
		return releaseStatus(template, fleet)
	}
	fields, ok := counters[gk]
	if !ok {
		return nil
	}
	status, _, _ := unstructured.NestedMap(template.Object, "status")
	if status == nil {
		status = map[string]any{}
	}
	if gk == jobKind && jobFinished(status) {
		// A finished Job's status is final: the API server refuses to take back Complete or Failed, or to
		// count active pods again. Only Flotilla's own condition still follows the fleet.
		setConditions(status, updatedField(gk), fleet.Now, propagated(template, fleet))
		return status
	}
	for _, c := range fields {
		status[c.field] = foldCounter(fleet, c, !fleet.Divided)
	}
	if gk == jobKind {
		for _, f := range []string{"succeeded", "failed"} {
			// The API server refuses a Job status whose counters go down (a cluster left the placement).
			if before, ok, _ := unstructured.NestedInt64(template.Object, "status", f); ok && before > status[f].(int64) {
				status[f] = before
			}
		}
	}
	if fleet.CaughtUp && gk != jobKind { // a Job's status has no observedGeneration
		status["observedGeneration"] = template.GetGeneration()
	}
	setConditions(status, updatedField(gk), fleet.Now, kindConditions(gk, status, fleet)...)
	setConditions(status, updatedField(gk), fleet.Now, propagated(template, fleet))
	return status
}

// foldCounter folds one counter over the fleet. A cluster that has not reported counts as zero.
func foldCounter(fleet Fleet, c counter, duplicated bool) int64 {
	var out int64
	for i, m := range fleet.Members {
		v, _, _ := unstructured.NestedInt64(m.Status, c.field)
		switch {
		case !duplicated || c.duplicated == summed:
			out += v
		case i == 0:
			out = v
		case c.duplicated == lowest:
			out = min(out, v)
		default:
			out = max(out, v)
		}
	}
	return out
}
