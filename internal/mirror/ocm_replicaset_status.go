package mirror

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ocmworkv1 "github.com/flotilla-io/flotilla/api/ocm/work/v1"
	ocmworkv1alpha1 "github.com/flotilla-io/flotilla/api/ocm/work/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// replicaSetStatus is a ManifestWorkReplicaSet's status: its ManifestWorks counted from their conditions, in
// all and per placement; OCM's three conditions; and each placement's rollout. hold is what keeps
// ManifestWorks of clusters no longer placed from being deleted ("" when nothing does).
func replicaSetStatus(rs *ocmworkv1alpha1.ManifestWorkReplicaSet, placements []*replicaPlacement, works map[string]*ocmworkv1.ManifestWork,
	d replicaDecision, hold string) ocmworkv1alpha1.ManifestWorkReplicaSetStatus {
	out := ocmworkv1alpha1.ManifestWorkReplicaSetStatus{Conditions: slices.Clone(rs.Status.Conditions), PlacementRollouts: d.rollouts}
	all := make([]*ocmworkv1.ManifestWork, 0, len(works))
	for _, mw := range works {
		all = append(all, mw)
	}
	out.Summary = summarize(all)
	decided := 0
	var unsettled, invalid, rolling []string
	for _, p := range placements {
		var mine []*ocmworkv1.ManifestWork
		for _, c := range p.clusters {
			if mw := works[c]; mw != nil {
				mine = append(mine, mw)
			}
		}
		s := ocmworkv1alpha1.PlacementSummary{Name: p.ref.Name, Summary: summarize(mine)}
		s.AvailableDecisionGroups = fmt.Sprintf("%d (%d / %d clusters applied)", succeededGroups(p, d), s.Summary.Applied, len(p.clusters))
		out.PlacementsSummary = append(out.PlacementsSummary, s)
		decided += len(p.clusters)
		switch {
		case p.invalid != "":
			invalid = append(invalid, fmt.Sprintf("placement %s: %s", p.ref.Name, p.invalid))
		case !p.Settled:
			unsettled = append(unsettled, p.Why)
		case !d.complete[p.ref.Name]:
			rolling = append(rolling, p.ref.Name)
		}
	}

	set := func(typ string, ok bool, reason, message string) {
		c := metav1.Condition{Type: typ, Status: metav1.ConditionFalse, Reason: reason, Message: message, ObservedGeneration: rs.Generation}
		if ok {
			c.Status = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&out.Conditions, c)
	}
	switch {
	case len(invalid) > 0:
		set(ocmworkv1alpha1.ConditionPlacementVerified, false, "InvalidRolloutStrategy", strings.Join(invalid, "; "))
	case len(unsettled) > 0:
		message := strings.Join(unsettled, "; ")
		if hold != "" {
			message += "; no ManifestWork is deleted until every placement has decided"
		}
		set(ocmworkv1alpha1.ConditionPlacementVerified, false, "PlacementDecisionNotFound", message)
	case decided == 0:
		set(ocmworkv1alpha1.ConditionPlacementVerified, false, "PlacementDecisionEmpty", "the placements decide on no cluster")
	default:
		set(ocmworkv1alpha1.ConditionPlacementVerified, true, "AsExpected", fmt.Sprintf("%d clusters decided", decided))
	}
	if len(rolling) > 0 {
		set(ocmworkv1alpha1.ConditionPlacementRolledOut, false, "Progressing", "rolling out on placements "+strings.Join(rolling, ", "))
	} else {
		set(ocmworkv1alpha1.ConditionPlacementRolledOut, true, "Complete", "every placement's clusters run the current template")
	}
	switch s := out.Summary; {
	case s.Total == 0:
		set(ocmworkv1alpha1.ConditionManifestworkApplied, false, "NotAsExpected", "no ManifestWork yet")
	case s.Applied == s.Total:
		set(ocmworkv1alpha1.ConditionManifestworkApplied, true, "AsExpected", fmt.Sprintf("%d ManifestWorks applied", s.Total))
	default:
		set(ocmworkv1alpha1.ConditionManifestworkApplied, false, "Processing", fmt.Sprintf("%d of %d ManifestWorks applied", s.Applied, s.Total))
	}
	return out
}

// summarize counts ManifestWorks by their conditions: Progressing counts those applied, neither available
// nor degraded yet.
func summarize(works []*ocmworkv1.ManifestWork) ocmworkv1alpha1.ManifestWorkReplicaSetSummary {
	var s ocmworkv1alpha1.ManifestWorkReplicaSetSummary
	for _, mw := range works {
		s.Total++
		applied := meta.IsStatusConditionTrue(mw.Status.Conditions, workv1alpha1.WorkConditionApplied)
		available := meta.IsStatusConditionTrue(mw.Status.Conditions, workv1alpha1.WorkConditionAvailable)
		degraded := meta.IsStatusConditionTrue(mw.Status.Conditions, "Degraded")
		if applied {
			s.Applied++
		}
		if available {
			s.Available++
		}
		if degraded {
			s.Degraded++
		}
		if applied && !available && !degraded {
			s.Progressing++
		}
	}
	return s
}

// succeededGroups counts a placement's decision groups whose clusters all succeeded in its rollout.
func succeededGroups(p *replicaPlacement, d replicaDecision) int {
	i := slices.IndexFunc(d.rollouts, func(r ocmworkv1alpha1.PlacementRollout) bool { return r.Name == p.ref.Name })
	if i < 0 {
		return 0
	}
	state := map[string]workv1alpha1.RolloutState{}
	for _, c := range d.rollouts[i].Rollout.Clusters {
		state[c.Name] = c.State
	}
	n := 0
	for _, g := range p.Groups {
		ok := len(g.Clusters) > 0
		for _, c := range g.Clusters {
			if s, mine := state[c]; mine && s != workv1alpha1.RolloutSucceeded {
				ok = false
			}
		}
		if ok {
			n++
		}
	}
	return n
}
