package scheduler

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/statepreservation"
)

// Reasons of the events the scheduler records on a binding's template about failover.
const (
	// ReasonEvicting: a cluster is being left; its copy stays until the eviction task ends.
	ReasonEvicting = "Evicting"
	// ReasonEvictionFinished: an eviction task ended; the binding controller removes the old copy.
	ReasonEvictionFinished = "EvictionFinished"
	// ReasonApplicationFailoverBlocked: the application failed on a cluster, but no other cluster can host the
	// binding, so the copy stays where it is.
	ReasonApplicationFailoverBlocked = "ApplicationFailoverBlocked"
	// ReasonStateNotPreserved: a statePreservation rule found no value in the failed cluster's last status.
	ReasonStateNotPreserved = "StateNotPreserved"
)

// schedule places the binding with f without the clusters its application failed on. When no placement is left
// without them, nothing is evicted: the binding is placed as it would be without the failures, and blocked
// says why the failover waits. It returns the failures the placement acts on.
func (r *Controller[T]) schedule(f *Framework, spec *workv1alpha1.ResourceBindingSpec, status *workv1alpha1.ResourceBindingStatus, clusters []clusterv1alpha1.Cluster,
	records []workv1alpha1.FailoverRecord, failed map[string]string, now time.Time) (Result, map[string]string, string, error) {
	trial := *spec
	trial.FailoverRecords = withApplicationFailures(records, failed, spec.Clusters, now)
	result, err := f.ScheduleBinding(&trial, status, clusters)
	if len(failed) == 0 {
		return result, nil, "", err
	}
	if _, placed := decide(spec.Clusters, result, err); placed {
		return result, failed, "", nil
	}
	why := "the placement chose no other cluster"
	if err != nil {
		why = err.Error()
	}
	blocked := fmt.Sprintf("the application is unhealthy on %s, but no other cluster can host it, so its copy stays: %s",
		clusterv1alpha1.ListInMessage(slices.Sorted(maps.Keys(failed))), why)
	trial.FailoverRecords = records
	result, err = f.ScheduleBinding(&trial, status, clusters)
	return result, nil, blocked, err
}

// recordFailovers adds to records what a new placement fails over from: the clusters the application failed
// on, each kept out of the binding's placement until its record expires, and the clusters a NoExecute taint
// evicted the binding from when the policy preserves state. The values the policy's statePreservation rules
// pick from the failed cluster's last reported status go into the record, for the binding controller to
// inject into the replacement.
func (r *Controller[T]) recordFailovers(ctx context.Context, b T, records []workv1alpha1.FailoverRecord, result Result,
	failed map[string]string, now time.Time) ([]workv1alpha1.FailoverRecord, error) {
	spec := b.BindingSpec()
	records = withApplicationFailures(records, failed, spec.Clusters, now)
	for _, old := range spec.Clusters {
		if placedOn(&workv1alpha1.ResourceBindingSpec{Clusters: result.Clusters}, old.Name) {
			continue
		}
		reason := ReasonApplicationFailure
		if _, ok := result.Evicted[old.Name]; ok {
			reason = ReasonTaintUntolerated
		} else if _, ok := failed[old.Name]; !ok {
			continue
		}
		rules := statePreservation(spec, reason)
		if len(rules) == 0 {
			continue
		}
		status, err := r.lastStatus(ctx, b, old.Name)
		if err != nil {
			return nil, err
		}
		labels, problems := statepreservation.Extract(rules, status)
		if len(problems) > 0 {
			r.Recorder.Eventf(templateRef(spec), nil, corev1.EventTypeWarning, ReasonStateNotPreserved, "Evict",
				"state from %s not preserved: %s", old.Name, strings.Join(problems, "; "))
		}
		i := slices.IndexFunc(records, func(rec workv1alpha1.FailoverRecord) bool { return rec.FromCluster == old.Name && rec.Reason == reason })
		if i < 0 {
			before := make([]string, len(spec.Clusters))
			for j, c := range spec.Clusters {
				before[j] = c.Name
			}
			records = append(records, workv1alpha1.FailoverRecord{FromCluster: old.Name, Reason: reason, ClustersBeforeFailover: before})
			i = len(records) - 1
		}
		if records[i].CreationTimestamp == nil {
			records[i].CreationTimestamp = &metav1.Time{Time: now}
		}
		records[i].ExpirationTimestamp = metav1.Time{Time: now.Add(FailoverRecordTTL)}
		if len(labels) > 0 {
			records[i].PreservedLabelState = labels
		}
	}
	return records, nil
}

// lastStatus is the status of the binding's template as cluster last reported it: the first manifest's
// status in the cluster's Work. The Work holds the member object's full status; the binding's aggregated
// status only a summary of its top-level fields. Nil when the cluster never reported one.
func (r *Controller[T]) lastStatus(ctx context.Context, b T, cluster string) (map[string]any, error) {
	works := &workv1alpha1.WorkList{}
	if err := r.Client.List(ctx, works, client.InNamespace(clusterv1alpha1.ClusterNamespace(cluster)),
		client.MatchingLabels{workv1alpha1.LabelBindingNamespace: b.GetNamespace(), workv1alpha1.LabelBindingName: b.GetName()}); err != nil {
		return nil, err
	}
	for _, w := range works.Items {
		if len(w.Status.ManifestStatuses) == 0 || w.Status.ManifestStatuses[0].Status == nil {
			continue
		}
		status := map[string]any{}
		// utiljson keeps whole numbers int64, so a preserved count reads 3, not 3e+00.
		if err := utiljson.Unmarshal(w.Status.ManifestStatuses[0].Status.Raw, &status); err != nil {
			return nil, fmt.Errorf("the status %s reported: %w", cluster, err)
		}
		return status, nil
	}
	return nil, nil
}

// recordEvictions puts an event on the template for each eviction the new placement started and each one
// that ended: "evicting from X: why" and "replacement healthy on Y, removing from X" or "grace period
// passed, removing from X".
func (r *Controller[T]) recordEvictions(b T, before *workv1alpha1.ResourceBindingSpec, status *workv1alpha1.ResourceBindingStatus,
	after workv1alpha1.ResourceBindingSpec, started []workv1alpha1.GracefulEvictionTask) {
	ref := templateRef(before)
	for _, task := range started {
		eventType := corev1.EventTypeWarning // a failure
		if task.Reason == ReasonPlacementChanged {
			eventType = corev1.EventTypeNormal
		}
		r.Recorder.Eventf(ref, nil, eventType, ReasonEvicting, "Evict", "evicting from %s: %s", task.FromCluster, evictionCause(task))
	}
	healthy := healthyAt(status.Conditions, b.GetGeneration())
	for _, task := range before.GracefulEvictionTasks {
		if slices.ContainsFunc(after.GracefulEvictionTasks, func(t workv1alpha1.GracefulEvictionTask) bool { return t.FromCluster == task.FromCluster }) {
			continue
		}
		if healthy {
			r.Recorder.Eventf(ref, nil, corev1.EventTypeNormal, ReasonEvictionFinished, "Evict", "replacement healthy on %s, removing from %s",
				describe(before.Clusters), task.FromCluster)
		} else {
			r.Recorder.Eventf(ref, nil, corev1.EventTypeNormal, ReasonEvictionFinished, "Evict", "grace period passed, removing from %s", task.FromCluster)
		}
	}
}

// templateRef is the binding's template, as the object its events are about.
func templateRef(spec *workv1alpha1.ResourceBindingSpec) *corev1.ObjectReference {
	res := spec.Resource
	return &corev1.ObjectReference{APIVersion: res.APIVersion, Kind: res.Kind, Namespace: res.Namespace, Name: res.Name, UID: res.UID}
}
