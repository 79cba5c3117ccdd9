package interpreter

import (
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// condition is one entry of a template's status.conditions, before the kind's timestamps are added.
type condition struct {
	Type, Status, Reason, Message string
}

// kindConditions folds the members' own conditions into the template's, for the kinds whose tools read
// them: a Deployment's Available and Progressing, a Job's Complete and Failed (with the conditions the API
// server demands beside them, and the Job's start and completion times).
func kindConditions(gk schema.GroupKind, status map[string]any, fleet Fleet) []condition {
	switch gk {
	case deploymentKind:
		return deploymentConditions(fleet)
	case jobKind:
		return jobConditions(status, fleet)
	}
	return nil
}

// deploymentConditions: Available is True only when it is in every cluster; Progressing is False when a
// cluster exceeded its progress deadline, True with NewReplicaSetAvailable (what kstatus and Argo CD wait
// for) when every cluster finished rolling out the current generation, and True with ReplicaSetUpdated
// while any is still rolling out, as the Deployment controller says of one cluster.
func deploymentConditions(fleet Fleet) []condition {
	var unavailable, rolling, stuck []string
	for _, m := range fleet.Members {
		if c := conditionIn(m.Status, "Available"); c == nil || c["status"] != "True" {
			unavailable = append(unavailable, m.Cluster)
		}
		switch c := conditionIn(m.Status, "Progressing"); {
		case c != nil && c["reason"] == "ProgressDeadlineExceeded":
			stuck = append(stuck, m.Cluster)
		case c == nil || c["status"] != "True" || c["reason"] != "NewReplicaSetAvailable":
			rolling = append(rolling, m.Cluster)
		}
	}
	available := condition{"Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability in every cluster"}
	if len(unavailable) > 0 || len(fleet.Members) == 0 {
		available = condition{"Available", "False", "MinimumReplicasUnavailable",
			"Deployment does not have minimum availability in " + listOrNone(unavailable)}
	}
	progressing := condition{"Progressing", "True", "NewReplicaSetAvailable", "Deployment has rolled out in every cluster"}
	switch {
	case len(stuck) > 0:
		progressing = condition{"Progressing", "False", "ProgressDeadlineExceeded",
			"Deployment exceeded its progress deadline in " + clusterv1alpha1.ListInMessage(stuck)}
	case len(rolling) > 0:
		progressing = condition{"Progressing", "True", "ReplicaSetUpdated", "Deployment is rolling out in " + clusterv1alpha1.ListInMessage(rolling)}
	case !fleet.CaughtUp || len(fleet.Members) == 0:
		progressing = condition{"Progressing", "True", "ReplicaSetUpdated", "not every cluster runs the current generation yet"}
	}
	return []condition{available, progressing}
}

// jobConditions: the Job is Complete when it completed in every cluster (its divided completions then sum
// to the template's), and has failed as soon as it failed in one: FailureTarget at once, Failed once no
// cluster runs any of its pods any more, as the Job controller does in one cluster (the API server refuses a
// Failed Job with active pods, and Complete without SuccessCriteriaMet).
func jobConditions(status map[string]any, fleet Fleet) []condition {
	var done, failed []string
	var failure map[string]any
	var started, completed string
	for _, m := range fleet.Members {
		if s, _, _ := unstructured.NestedString(m.Status, "startTime"); s != "" && (started == "" || earlier(s, started)) {
			started = s
		}
		if c := conditionIn(m.Status, "Failed"); c != nil && c["status"] == "True" {
			failed = append(failed, m.Cluster)
			if failure == nil {
				failure = c
			}
		}
		if c := conditionIn(m.Status, "Complete"); c != nil && c["status"] == "True" {
			done = append(done, m.Cluster)
			if s, _, _ := unstructured.NestedString(m.Status, "completionTime"); s != "" && (completed == "" || earlier(completed, s)) {
				completed = s
			}
		}
	}
	if _, ok := status["startTime"]; !ok && started != "" {
		status["startTime"] = started // set once: the API server keeps a running Job's startTime
	}
	switch {
	case len(failed) > 0:
		reason, _ := failure["reason"].(string)
		if reason == "" {
			reason = "JobFailed"
		}
		message := "the Job failed in " + clusterv1alpha1.ListInMessage(failed)
		if m, _ := failure["message"].(string); m != "" {
			message += " (" + failed[0] + ": " + m + ")"
		}
		out := []condition{{"FailureTarget", "True", reason, message}}
		if active, _ := status["active"].(int64); active == 0 {
			ensureStarted(status, fleet.Now)
			out = append(out, condition{"Failed", "True", reason, message})
		}
		return out
	}
	var out []condition
	if c := conditionIn(status, "FailureTarget"); c != nil && c["status"] == "True" {
		// The cluster where it failed left the placement (a failover): the API server refuses Complete
		// beside a True FailureTarget.
		out = append(out, condition{"FailureTarget", "False", "FailedClusterLeft", "no target cluster reports the Job failed any more"})
	}
	if len(fleet.Members) > 0 && len(done) == len(fleet.Members) {
		ensureStarted(status, fleet.Now)
		if completed == "" || earlier(completed, status["startTime"].(string)) {
			completed = fleet.Now.UTC().Format(time.RFC3339)
		}
		status["completionTime"] = completed
		message := "Reached expected number of succeeded pods in every cluster"
		out = append(out, condition{"SuccessCriteriaMet", "True", "CompletionsReached", message}, condition{"Complete", "True", "CompletionsReached", message})
	}
	return out
}

// jobFinished says whether the hub's Job already carries a terminal condition.
func jobFinished(status map[string]any) bool {
	for _, t := range []string{"Complete", "Failed"} {
		if c := conditionIn(status, t); c != nil && c["status"] == "True" {
			return true
		}
	}
	return false
}

// ensureStarted gives a finishing Job a startTime, which the API server demands, when no cluster reported one.
func ensureStarted(status map[string]any, now time.Time) {
	if s, _ := status["startTime"].(string); s == "" {
		status["startTime"] = now.UTC().Format(time.RFC3339)
	}
}

// earlier compares two RFC 3339 times; an unparsable one is never earlier.
func earlier(a, b string) bool {
	ta, errA := time.Parse(time.RFC3339, a)
	tb, errB := time.Parse(time.RFC3339, b)
	return errA == nil && errB == nil && ta.Before(tb)
}

// propagated is the template condition flotilla.io/Propagated: True when every target cluster applied the
// template's current generation and is healthy; otherwise the binding's reason for the first of these
// that fails.
func propagated(template *unstructured.Unstructured, fleet Fleet) condition {
	switch {
	case fleet.Applied.Status != metav1.ConditionTrue:
		return condition{workv1alpha1.TemplateConditionPropagated, "False", orDefault(fleet.Applied.Reason, "NotApplied"),
			orDefault(fleet.Applied.Message, "not applied yet")}
	case !fleet.CaughtUp:
		return condition{workv1alpha1.TemplateConditionPropagated, "False", "Updating",
			"not every target cluster runs generation " + strconv.FormatInt(template.GetGeneration(), 10) + " yet"}
	case fleet.Healthy.Status != metav1.ConditionTrue:
		return condition{workv1alpha1.TemplateConditionPropagated, "False", orDefault(fleet.Healthy.Reason, "NotHealthy"),
			orDefault(fleet.Healthy.Message, "not healthy yet")}
	}
	return condition{workv1alpha1.TemplateConditionPropagated, "True", "Propagated", "applied and healthy in every target cluster"}
}

// setConditions puts conditions into status.conditions, replacing those of the same type and keeping the
// others. A condition whose status did not change keeps its lastTransitionTime, and one that did not change
// at all keeps every timestamp, so an unchanged fleet leaves the template's status byte for byte as it was.
// Each kind gets only the timestamp fields its condition type has (updated names the one besides
// lastTransitionTime, if any): the API server drops others, and the status would then never look written.
func setConditions(status map[string]any, updated string, now time.Time, want ...condition) {
	list, _ := status["conditions"].([]any)
	stamp := now.UTC().Format(time.RFC3339)
	for _, c := range want {
		entry := map[string]any{"type": c.Type, "status": c.Status, "reason": c.Reason, "message": c.Message, "lastTransitionTime": stamp}
		updatedAt := stamp // Deployment's lastUpdateTime, Job's lastProbeTime
		at := -1
		for i, item := range list {
			if old, _ := item.(map[string]any); old != nil && old["type"] == c.Type {
				at = i
				if old["status"] == c.Status && old["lastTransitionTime"] != nil {
					entry["lastTransitionTime"] = old["lastTransitionTime"]
				}
				if old["status"] == c.Status && old["reason"] == c.Reason && old["message"] == c.Message {
					if t, ok := old[updated].(string); ok {
						updatedAt = t
					}
				}
			}
		}
		if updated != "" {
			entry[updated] = updatedAt
		}
		if at >= 0 {
			list[at] = entry
		} else {
			list = append(list, entry)
		}
	}
	status["conditions"] = list
}

// updatedField is the condition field of a kind that records the last update besides the last transition.
func updatedField(gk schema.GroupKind) string {
	switch gk {
	case deploymentKind:
		return "lastUpdateTime"
	case jobKind:
		return "lastProbeTime"
	}
	return ""
}

// conditionIn finds a condition in a status.
func conditionIn(status map[string]any, t string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(status, "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m != nil && m["type"] == t {
			return m
		}
	}
	return nil
}

func listOrNone(clusters []string) string {
	if len(clusters) == 0 {
		return "any cluster"
	}
	return clusterv1alpha1.ListInMessage(clusters)
}

func orDefault(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}
