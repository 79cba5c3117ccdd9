package clusterstatus

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// A Cluster's status has several writers, each applying only what it owns under its own field manager, so
// none of them reads and writes back what another wrote and none of them conflicts with another:
//   - the reporter (the agent, or the hub's push reporter): the facts it collects from the member (version,
//     platform, agent version, API enablements, node and resource summaries, health endpoints) and the
//     APIsComplete condition;
//   - the push reporter's credentials check: the CredentialsValid condition;
//   - the tunnel status writer, on the hub that holds Pull clusters' tunnels: the TunnelConnected condition;
//   - the health monitor: the Ready condition (and, in the spec, the health taints);
//   - the deregistration of a deleted Cluster (internal/registration): the Deleting condition.
var (
	// AgentFieldManager owns the status facts an agent reports.
	AgentFieldManager = workv1alpha1.ControllerFieldManager("agent")
	// PushFieldManager owns the status facts the hub reports for Push clusters.
	PushFieldManager = workv1alpha1.ControllerFieldManager("cluster-status")
	// CredentialsFieldManager owns the CredentialsValid condition of Push clusters.
	CredentialsFieldManager = workv1alpha1.ControllerFieldManager("push-credentials")
	// TunnelFieldManager owns the TunnelConnected condition of Pull clusters.
	TunnelFieldManager = workv1alpha1.ControllerFieldManager("tunnel")
	// HealthFieldManager owns the Ready condition and the health taints.
	HealthFieldManager = workv1alpha1.ControllerFieldManager("cluster-health")
)

// reporterConditions are the condition types the reporter owns.
var reporterConditions = []string{clusterv1alpha1.ClusterConditionAPIsComplete}

// reportedFacts is the part of a status the reporter owns: everything but the conditions of other writers.
func reportedFacts(s *clusterv1alpha1.ClusterStatus) *clusterv1alpha1.ClusterStatus {
	out := s.DeepCopy()
	out.Conditions = conditionsOf(s.Conditions, reporterConditions...)
	return out
}

// conditionsOf returns copies of the conditions of the given types, in their order in conditions.
func conditionsOf(conditions []metav1.Condition, types ...string) []metav1.Condition {
	var out []metav1.Condition
	for _, c := range conditions {
		if slices.Contains(types, c.Type) {
			out = append(out, c)
		}
	}
	return out
}

// withCondition returns the current conditions of c's type, set to c: an unchanged status keeps its
// transition time, so re-applying an unchanged condition is no change. It reports whether c changed it.
func withCondition(current []metav1.Condition, c metav1.Condition) ([]metav1.Condition, bool) {
	out := conditionsOf(current, c.Type)
	changed := meta.SetStatusCondition(&out, c)
	return out, changed
}
