package rollout

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// Group is a decision group of the placed clusters, in rollout order.
type Group struct {
	// Name is the group's name, or its index when it has none.
	Name     string
	Clusters []string
}

// Cluster is what the render controller knows of one target cluster.
type Cluster struct {
	Name string
	// Hash is the revision hash the cluster's Work carries ("" without a Work).
	Hash string
	// Healthy: the Work's status speaks of its current spec and says the object is healthy.
	Healthy bool
}

// Input is what a rollout decision needs.
type Input struct {
	Strategy *policyv1alpha1.RolloutStrategy
	// Groups are the decision groups in order; clusters of no group follow, by name.
	Groups   []Group
	Clusters []Cluster
	// Previous is the binding's status.rollout (nil on the first decision).
	Previous *workv1alpha1.RolloutStatus
	// TargetHash and TargetRevision are the revision the template now has.
	TargetHash     string
	TargetRevision int64
	// Paused holds the next wave; AllAtOnce sends the target to every cluster now.
	Paused, AllAtOnce bool
	Now               time.Time
}

// Decision is what the rollout does now.
type Decision struct {
	// Status is the binding's new status.rollout.
	Status workv1alpha1.RolloutStatus
	// OnTarget is the set of clusters whose Works carry the target revision; the others keep (or, new, get)
	// the stable revision.
	OnTarget map[string]bool
	// Started are the clusters this decision sends the target to, in order (a new wave when not empty).
	Started []string
	// Failed is true when more clusters failed than maxFailures allows: no cluster is started any more.
	Failed bool
	// Complete is true when every cluster succeeded (or failed within maxFailures).
	Complete bool
	// RequeueAfter is when a state changes by time alone (minSuccessTime or progressDeadline), 0 for never.
	RequeueAfter time.Duration
}

// Plan decides which clusters run the target revision. A cluster once sent the target stays on it; a
// cluster that succeeded stays succeeded and one that failed stays failed until the target changes. The
// first decision for a binding (no previous status) takes the current content as stable: it is what the
// clusters got when the policy said nothing of waves, and it rolls nothing.
func Plan(in Input) (Decision, error) {
	prev := in.Previous
	st := workv1alpha1.RolloutStatus{TargetHash: in.TargetHash, TargetRevision: in.TargetRevision}
	switch {
	case prev == nil:
		st.StableHash, st.StableRevision = in.TargetHash, in.TargetRevision
	case prev.TargetHash != in.TargetHash && complete(prev):
		st.StableHash, st.StableRevision = prev.TargetHash, prev.TargetRevision
	default:
		st.StableHash, st.StableRevision = prev.StableHash, prev.StableRevision
	}
	newTarget := prev == nil || prev.TargetHash != in.TargetHash
	if !newTarget {
		st.Wave = prev.Wave
	}
	total := len(in.Clusters)
	p := progressive(in.Strategy)
	concurrency, err := count(p.MaxConcurrency, total, total, "maxConcurrency")
	if err != nil {
		return Decision{}, err
	}
	concurrency = max(concurrency, 1)
	maxFailures, err := count(p.MaxFailures, total, 0, "maxFailures")
	if err != nil {
		return Decision{}, err
	}

	d := Decision{OnTarget: map[string]bool{}}
	group := map[string]string{}
	var order []string
	for _, g := range in.Groups {
		for _, c := range g.Clusters {
			if _, seen := group[c]; !seen {
				group[c] = g.Name
				order = append(order, c)
			}
		}
	}
	facts := map[string]Cluster{}
	var rest []string
	for _, c := range in.Clusters {
		facts[c.Name] = c
		if _, grouped := group[c.Name]; !grouped {
			rest = append(rest, c.Name)
		}
	}
	slices.Sort(rest)
	order = slices.DeleteFunc(append(order, rest...), func(c string) bool { _, placed := facts[c]; return !placed })

	inFlight, failures := 0, 0
	for _, name := range order {
		c := facts[name]
		item := workv1alpha1.ClusterRollout{Name: name, Group: group[name], State: workv1alpha1.RolloutPending, Revision: st.StableRevision}
		var before *workv1alpha1.ClusterRollout
		if prev != nil && !newTarget {
			if i := slices.IndexFunc(prev.Clusters, func(p workv1alpha1.ClusterRollout) bool { return p.Name == name }); i >= 0 {
				before = &prev.Clusters[i]
			}
		}
		switch {
		case before != nil && before.State != workv1alpha1.RolloutPending:
			item = *before
		case prev == nil || in.AllAtOnce || c.Hash == in.TargetHash:
			// On the target already (the first decision; all at once; a Work written before its status was;
			// or a target that is also what the cluster ran): judged like any cluster sent the target.
			item.State, item.Since = workv1alpha1.RolloutProgressing, stamp(in.Now)
		}
		if item.State != workv1alpha1.RolloutPending {
			item.Revision = st.TargetRevision
			d.OnTarget[name] = true
			judge(&item, c, p, in.Now, &d)
		}
		switch item.State {
		case workv1alpha1.RolloutProgressing:
			inFlight++
		case workv1alpha1.RolloutFailed:
			failures++
		}
		st.Clusters = append(st.Clusters, item)
	}

	d.Failed = failures > maxFailures
	mandatory := mandatoryGroups(p, in.Groups)
	if !d.Failed && !in.Paused {
		// The clusters that may start now: the mandatory groups' until they all succeeded, then (per group)
		// the first group not done, or (Progressive) every other cluster in order.
		eligible := func(i int) bool { return true }
		if pending := firstUndone(st.Clusters, func(c workv1alpha1.ClusterRollout) bool { return mandatory[c.Group] }); pending {
			eligible = func(i int) bool { return mandatory[st.Clusters[i].Group] }
		} else if in.Strategy != nil && in.Strategy.Type == policyv1alpha1.RolloutProgressivePerGroup {
			if i := slices.IndexFunc(st.Clusters, func(c workv1alpha1.ClusterRollout) bool { return !done(c.State) }); i >= 0 {
				current := st.Clusters[i].Group
				eligible = func(j int) bool { return st.Clusters[j].Group == current }
			}
		}
		for i := range st.Clusters {
			if inFlight >= concurrency {
				break
			}
			if c := &st.Clusters[i]; c.State == workv1alpha1.RolloutPending && eligible(i) {
				c.State, c.Since, c.Revision = workv1alpha1.RolloutProgressing, stamp(in.Now), st.TargetRevision
				d.OnTarget[c.Name] = true
				d.Started = append(d.Started, c.Name)
				inFlight++
			}
		}
		if len(d.Started) > 0 {
			st.Wave++
		}
	}
	d.Complete = !d.Failed && !slices.ContainsFunc(st.Clusters, func(c workv1alpha1.ClusterRollout) bool { return !done(c.State) })
	if d.Complete {
		st.StableHash, st.StableRevision = st.TargetHash, st.TargetRevision
	}
	d.Status = st
	return d, nil
}

// judge moves a cluster on the target along: Progressing until healthy for minSuccessTime (Succeeded) or
// past progressDeadline without being healthy (Failed). Succeeded and Failed stay.
func judge(item *workv1alpha1.ClusterRollout, c Cluster, p policyv1alpha1.ProgressiveRollout, now time.Time, d *Decision) {
	if item.State != workv1alpha1.RolloutProgressing {
		return
	}
	if item.Since == nil {
		item.Since = stamp(now)
	}
	if c.Hash == "" || !c.Healthy {
		item.HealthySince = nil
		if p.ProgressDeadline == nil {
			return
		}
		left := item.Since.Add(p.ProgressDeadline.Duration).Sub(now)
		if left <= 0 {
			item.State, item.Since = workv1alpha1.RolloutFailed, stamp(now)
			return
		}
		d.requeue(left)
		return
	}
	if item.HealthySince == nil {
		item.HealthySince = stamp(now)
	}
	left := item.HealthySince.Add(p.MinSuccessTime.Duration).Sub(now)
	if left <= 0 {
		item.State, item.Since, item.HealthySince = workv1alpha1.RolloutSucceeded, stamp(now), nil
		return
	}
	d.requeue(left)
}

// Healthy says whether a Work's status speaks of its current spec and says its workload is healthy: what a
// cluster on the target must show for minSuccessTime.
func Healthy(w *workv1alpha1.Work) bool {
	applied := meta.FindStatusCondition(w.Status.Conditions, workv1alpha1.WorkConditionApplied)
	ms := w.TemplateStatus()
	if applied == nil || applied.ObservedGeneration != w.Generation || ms == nil {
		return false
	}
	return ms.Applied && ms.Health == workv1alpha1.ResourceHealthy &&
		meta.IsStatusConditionTrue(ms.Conditions, workv1alpha1.ManifestConditionObserved)
}

// stamp is t as a status time. Status times are stored in whole seconds; rounding up, not down, keeps
// minSuccessTime and progressDeadline, counted from them, from ending up to a second early once the status
// has been written and read back.
func stamp(t time.Time) *metav1.Time {
	if s := t.Truncate(time.Second); !s.Equal(t) {
		t = s.Add(time.Second)
	}
	return &metav1.Time{Time: t}
}

func (d *Decision) requeue(after time.Duration) {
	if d.RequeueAfter == 0 || after < d.RequeueAfter {
		d.RequeueAfter = after
	}
}

func done(s workv1alpha1.RolloutState) bool {
	return s == workv1alpha1.RolloutSucceeded || s == workv1alpha1.RolloutFailed
}

// firstUndone says whether a cluster matching in has not succeeded yet.
func firstUndone(clusters []workv1alpha1.ClusterRollout, in func(workv1alpha1.ClusterRollout) bool) bool {
	return slices.ContainsFunc(clusters, func(c workv1alpha1.ClusterRollout) bool {
		return in(c) && c.State != workv1alpha1.RolloutSucceeded
	})
}

func complete(s *workv1alpha1.RolloutStatus) bool {
	return s.StableHash == s.TargetHash
}

// progressive returns the strategy's progressive settings (zero when it has none).
func progressive(s *policyv1alpha1.RolloutStrategy) policyv1alpha1.ProgressiveRollout {
	if s == nil || s.Progressive == nil {
		return policyv1alpha1.ProgressiveRollout{}
	}
	return *s.Progressive
}

// mandatoryGroups names the groups the strategy updates first, by name or index.
func mandatoryGroups(p policyv1alpha1.ProgressiveRollout, groups []Group) map[string]bool {
	out := map[string]bool{}
	for _, m := range p.MandatoryDecisionGroups {
		for i, g := range groups {
			if m.GroupName != "" && g.Name == m.GroupName || m.GroupIndex != nil && int(*m.GroupIndex) == i {
				out[g.Name] = true
			}
		}
	}
	return out
}

// count is Count with an error naming the progressive field.
func count(v *intstr.IntOrString, total, def int, field string) (int, error) {
	n, err := Count(v, total, def)
	if err != nil {
		return 0, fmt.Errorf("progressive.%s: %w", field, err)
	}
	return n, nil
}

// Count reads a count or a percentage of total such as maxConcurrency or maxFailures (a percentage rounds
// down); unset is def. Admission refuses what it cannot read (with a total of 100, so that a percentage over
// 100% shows), in the same words.
func Count(v *intstr.IntOrString, total, def int) (int, error) {
	if v == nil {
		return def, nil
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(v, total, false)
	if err != nil || n < 0 || v.Type == intstr.String && (n > total || strings.HasPrefix(v.StrVal, "-")) {
		return 0, fmt.Errorf("%q is neither a count nor a percentage from 0%% to 100%%", v.String())
	}
	return n, nil
}
