// Package scheduler places bindings on clusters, kube-scheduler style: filter plugins drop clusters that
// cannot host the binding, score plugins rank the rest, and replica assignment divides the replicas.
package scheduler

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/clusterset"
)

// FilterPlugin says why a cluster cannot host a binding, or "" when it can.
type FilterPlugin interface {
	Name() string
	Filter(b *workv1alpha1.ResourceBindingSpec, c *clusterv1alpha1.Cluster) string
}

// ScorePlugin ranks a feasible cluster; higher is better.
type ScorePlugin interface {
	Name() string
	Score(b *workv1alpha1.ResourceBindingSpec, c *clusterv1alpha1.Cluster) int64
}

// Framework is an ordered set of plugins.
type Framework struct {
	Filters []FilterPlugin
	Scores  []ScorePlugin
	// Taints is the taint filter, which also says which clusters a binding is evicted from and when a
	// toleration runs out.
	Taints TaintToleration
	// full are clusters that have no room for the binding being placed, whatever their capacity says: its
	// replicas stayed unschedulable there (WithoutRoomIn).
	full map[string]int32
}

// DefaultFailoverToleration is how long a binding tolerates a cluster's health NoExecute taints unless its
// policy says otherwise: the 300 s Kubernetes gives pods on a node that stopped reporting.
const DefaultFailoverToleration = 5 * time.Minute

// New is the framework with every built-in plugin; bindings fail over from an unhealthy cluster after
// failoverAfter unless their policy tolerates its health taints itself.
func New(failoverAfter time.Duration) *Framework {
	taints := TaintToleration{FailoverAfter: failoverAfter}
	return &Framework{
		Filters: []FilterPlugin{APIEnablement{}, ClusterAffinity{}, taints, FailoverRecords{}, NodeFit{}},
		Scores:  []ScorePlugin{Locality{}},
		Taints:  taints,
	}
}

// WithoutRoomIn is the framework for a pass that moves a binding's stuck replicas (deschedule.go): the
// clusters they are stuck in have no room for more of them.
func (f *Framework) WithoutRoomIn(stuck map[string]int32) *Framework {
	if len(stuck) == 0 {
		return f
	}
	g := *f
	g.full = stuck
	return &g
}

// Confined is the framework for the bindings of a namespace granted g: the same plugins, with ClusterSetGrant
// first, so its refusal is the one a cluster left out of every placement is counted under. A grant that does
// not confine (a cluster-scoped binding, a namespace without bindings on an open hub) returns f itself.
func (f *Framework) Confined(g clusterset.Grant) *Framework {
	if !g.Confined {
		return f
	}
	confined := *f
	confined.Filters = append([]FilterPlugin{ClusterSetGrant{Grant: g}}, f.Filters...)
	return &confined
}

// Default is New with the default failover toleration.
func Default() *Framework { return New(DefaultFailoverToleration) }

// NoFitError says why no cluster can host a binding, cluster by cluster.
type NoFitError struct {
	Reasons map[string]string // cluster → why it was filtered out
}

func (e *NoFitError) Error() string {
	if len(e.Reasons) == 0 {
		return "no cluster is registered"
	}
	byReason, named := map[string][]string{}, map[string]bool{}
	for cluster, reason := range e.Reasons {
		// A reason that names its cluster ("member1 is in no ClusterSet ...") is counted with the same
		// reason of the other clusters.
		if rest, ok := strings.CutPrefix(reason, cluster+" is "); ok {
			reason, named["are "+rest] = "are "+rest, true
		}
		byReason[reason] = append(byReason[reason], cluster)
	}
	parts := make([]string, 0, len(byReason))
	for reason, clusters := range byReason {
		sort.Strings(clusters)
		if named[reason] && len(clusters) == 1 {
			parts = append(parts, clusters[0]+" is "+strings.TrimPrefix(reason, "are "))
			continue
		}
		parts = append(parts, fmt.Sprintf("%d %s (%s)", len(clusters), reason, clusterv1alpha1.ListInMessage(clusters)))
	}
	sort.Strings(parts)
	return fmt.Sprintf("0/%d clusters fit: %s", len(e.Reasons), strings.Join(parts, "; "))
}

// Result is a placement: the clusters with their replicas and, with clusterAffinities, the group used.
type Result struct {
	Clusters     []workv1alpha1.TargetCluster
	AffinityName string
	// Evicted names the clusters the binding runs on that a NoExecute taint moves it away from, and why.
	Evicted map[string]string
	// Note says how the placement departs from what the policy asked, for example equal weights because no
	// static weight entry selects a feasible cluster; empty when it does not.
	Note string
	// Verdicts say why each cluster left out was not chosen; set also when nothing fits. With
	// clusterAffinities they are those of the group used or, when none fits, of every group tried.
	Verdicts []workv1alpha1.ClusterVerdict
}

// Schedule places a binding. With clusterAffinities the groups are tried in order, starting with the group
// in use (observedAffinity), so a binding falls through to the next group when its group cannot host it and
// does not move back on its own. Clusters are considered in name order so results are deterministic.
func (f *Framework) Schedule(b *workv1alpha1.ResourceBindingSpec, clusters []clusterv1alpha1.Cluster, observedAffinity string) (Result, error) {
	return f.schedule(b, clusters, observedAffinity, false)
}

// ScheduleBinding places a binding from its spec and status: as Schedule does, from the clusterAffinities
// group in use, unless the binding asks for a fresh pass (Fresh). A fresh pass places the binding as if it
// ran nowhere yet: the groups are tried from the first, the clusters it runs on get no preference, and
// divided replicas are shared out from scratch rather than adjusted, so replicas may move back to a
// recovered or preferred cluster. Filters still see where the binding runs, so a cluster it runs on is not
// dropped for a doubt that only keeps new placements away (a NoSchedule taint, an incomplete API list).
func (f *Framework) ScheduleBinding(spec *workv1alpha1.ResourceBindingSpec, status *workv1alpha1.ResourceBindingStatus, clusters []clusterv1alpha1.Cluster) (Result, error) {
	if Fresh(spec, status) {
		return f.schedule(spec, clusters, "", true)
	}
	return f.schedule(spec, clusters, status.SchedulerObservedAffinityName, false)
}

// Fresh reports whether a binding asks for a fresh scheduling pass: spec.rescheduleTriggeredAt (set by a
// Rebalancer) is not the trigger the scheduler last answered (status.rescheduleTriggerObserved). Once the
// scheduler has placed it for the trigger, the binding is sticky again. A binding placed before that field
// existed counts a trigger from the second of its last placement or later as unanswered: times are kept to
// the second.
func Fresh(spec *workv1alpha1.ResourceBindingSpec, status *workv1alpha1.ResourceBindingStatus) bool {
	trigger := spec.RescheduleTriggeredAt
	switch {
	case trigger == nil:
		return false
	case status.RescheduleTriggerObserved != nil:
		return !trigger.Equal(status.RescheduleTriggerObserved)
	}
	return status.LastScheduledTime == nil || !trigger.Before(status.LastScheduledTime)
}

func (f *Framework) schedule(b *workv1alpha1.ResourceBindingSpec, clusters []clusterv1alpha1.Cluster, observedAffinity string, fresh bool) (Result, error) {
	if b.Placement == nil || len(b.Placement.ClusterAffinities) == 0 {
		targets, note, verdicts, err := f.scheduleOne(b, clusters, fresh)
		return Result{Clusters: targets, Evicted: f.evicted(b, clusters), Note: note, Verdicts: verdicts}, err
	}
	terms := b.Placement.ClusterAffinities
	start := max(0, slices.IndexFunc(terms, func(t policyv1alpha1.ClusterAffinityTerm) bool { return t.AffinityName == observedAffinity }))
	var reasons []string
	var all []workv1alpha1.ClusterVerdict
	for _, term := range terms[start:] {
		spec := *b
		placement := *b.Placement
		placement.ClusterAffinity, placement.ClusterAffinities = &term.ClusterAffinity, nil
		spec.Placement = &placement
		targets, note, verdicts, err := f.scheduleOne(&spec, clusters, fresh)
		if err == nil {
			return Result{Clusters: targets, AffinityName: term.AffinityName, Evicted: f.evicted(b, clusters), Note: note, Verdicts: verdicts}, nil
		}
		reasons = append(reasons, fmt.Sprintf("group %s: %v", term.AffinityName, err))
		for _, v := range verdicts {
			v.Reason = "(group " + term.AffinityName + ") " + v.Reason
			all = append(all, v)
		}
	}
	return Result{Verdicts: all}, fmt.Errorf("no clusterAffinities group fits: %s", strings.Join(reasons, "; "))
}

// evicted lists the clusters the binding runs on that TaintToleration now refuses.
func (f *Framework) evicted(b *workv1alpha1.ResourceBindingSpec, clusters []clusterv1alpha1.Cluster) map[string]string {
	out := map[string]string{}
	for i := range clusters {
		if placedOn(b, clusters[i].Name) {
			if reason := f.Taints.Filter(b, &clusters[i]); reason != "" {
				out[clusters[i].Name] = reason
			}
		}
	}
	return out
}

// scheduleOne filters, ranks, spreads and assigns replicas under one cluster affinity, and says why each
// cluster left out was. A fresh pass ranks and assigns as for a binding that runs nowhere yet.
func (f *Framework) scheduleOne(b *workv1alpha1.ResourceBindingSpec, clusters []clusterv1alpha1.Cluster, fresh bool) ([]workv1alpha1.TargetCluster, string, []workv1alpha1.ClusterVerdict, error) {
	reasons := map[string]string{}
	var verdicts []workv1alpha1.ClusterVerdict
	var feasible []*clusterv1alpha1.Cluster
	for i := range clusters {
		c := &clusters[i]
		if refused := f.filterVerdicts(b, c); len(refused) > 0 {
			reasons[c.Name] = refused[0].Reason
			verdicts = append(verdicts, refused...)
			continue
		}
		feasible = append(feasible, c)
	}
	if len(feasible) == 0 {
		return nil, "", verdicts, &NoFitError{Reasons: reasons}
	}
	running := b.Clusters // room for a fresh pass too: the binding's own pods hold some
	if fresh {
		unplaced := *b
		unplaced.Clusters = nil
		b = &unplaced
	}
	scores := map[string]int64{}
	for _, c := range feasible {
		for _, s := range f.Scores {
			scores[c.Name] += s.Score(b, c)
		}
	}
	slices.SortFunc(feasible, func(a, c *clusterv1alpha1.Cluster) int {
		return cmp.Or(cmp.Compare(scores[c.Name], scores[a.Name]), cmp.Compare(a.Name, c.Name))
	})
	if b.Placement != nil {
		picked, err := spread(b.Placement.SpreadConstraints, feasible)
		if err != nil {
			return nil, "", append(verdicts, leftOut(feasible, nil, PluginSpreadConstraints, "cannot be spread over: "+err.Error())...), err
		}
		verdicts = append(verdicts, leftOut(feasible, picked, PluginSpreadConstraints, "are not among the clusters the spread constraints pick")...)
		feasible = picked
	}
	room := newRooms(b, f.full)
	if err := fitsCapacity(b, feasible, running, room); err != nil {
		return nil, "", append(verdicts, leftOut(feasible, nil, PluginCapacity, "lack room together: "+err.Error())...), err
	}
	targets, note := assignReplicas(b, feasible, room)
	return targets, note, append(verdicts, divisionVerdicts(b, feasible, targets, room)...), nil
}
