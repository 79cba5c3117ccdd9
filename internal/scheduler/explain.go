package scheduler

import (
	"slices"
	"strconv"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// Explanation is one cluster's line of flotilla explain: placed with its replicas, leaving, or why not.
type Explanation struct {
	Cluster  string
	Placed   bool
	Replicas int32
	Why      []string // "Plugin: reason", when not placed
}

// Explain says for each cluster of names whether the binding is placed there or why not, from its
// spec.clusters, eviction tasks and status.notPlacedOn.
func Explain(b workv1alpha1.Binding, names []string) []Explanation {
	spec, status := b.BindingSpec(), b.BindingStatus()
	out := make([]Explanation, 0, len(names))
	for _, name := range names {
		e := Explanation{Cluster: name}
		if i := slices.IndexFunc(spec.Clusters, func(t workv1alpha1.TargetCluster) bool { return t.Name == name }); i >= 0 {
			e.Placed, e.Replicas = true, spec.Clusters[i].Replicas
			out = append(out, e)
			continue
		}
		for _, v := range status.NotPlacedOn {
			if v.Cluster == name {
				e.Why = append(e.Why, v.Plugin+": "+v.Reason)
			}
		}
		if i := slices.IndexFunc(spec.GracefulEvictionTasks, func(t workv1alpha1.GracefulEvictionTask) bool { return t.FromCluster == name }); i >= 0 {
			e.Why = append(e.Why, "leaving: "+spec.GracefulEvictionTasks[i].Reason+", its copy kept until the replacement is healthy")
		}
		if len(e.Why) == 0 {
			why := "not considered yet: the scheduler has not placed this binding since the cluster joined"
			if status.NotPlacedOnOmitted > 0 {
				why = "not listed: " + strconv.Itoa(int(status.NotPlacedOnOmitted)) + " verdicts did not fit in the binding's status"
			}
			e.Why = []string{why}
		}
		out = append(out, e)
	}
	return out
}
