package addon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-io/flotilla/api/addon/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/rollout"
)

// plan is what the rollouts of an add-on's placements decide now.
type plan struct {
	// onTarget are the clusters that may take their current rendering.
	onTarget map[string]bool
	rollouts []addonv1alpha1.PlacementRollout
	// incomplete names the placements whose rollout is not complete.
	incomplete []string
	requeue    time.Duration
}

// roll decides, per placement, which of its clusters take the add-on's current rendering now, with
// rollout.Plan. A placement's target is the set of its clusters' renderings (its hash names it): a change of
// the template, or of the config of any of its clusters, is a new target; a cluster runs the target when its
// Work carries its current rendering. Clusters the rollout has not reached keep their Works; a cluster without
// a Work gets its current rendering at once. Clusters of no placement (Manual) take every change at once.
func (r *Controller) roll(ctx context.Context, a *addonv1alpha1.AddOn, ps []*placed, targets []*target) (plan, error) {
	out := plan{onTarget: map[string]bool{}}
	if len(ps) == 0 {
		return out, nil
	}
	// The previous rollouts are read from the API server, not the cache (see Controller.Reader).
	fresh := &addonv1alpha1.AddOn{}
	if err := r.Reader.Get(ctx, client.ObjectKeyFromObject(a), fresh); err != nil {
		return out, err
	}
	for _, p := range ps {
		var clusters []rollout.Cluster
		var lines []string
		for _, t := range targets {
			if t.placement != p || t.rendered == nil {
				continue
			}
			lines = append(lines, t.cluster+"="+t.rendered.Hash)
			clusters = append(clusters, rollout.Cluster{Name: t.cluster})
		}
		if len(clusters) == 0 {
			continue
		}
		slices.Sort(lines)
		sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
		targetHash := hex.EncodeToString(sum[:8])
		for i := range clusters {
			t := targets[slices.IndexFunc(targets, func(t *target) bool { return t.cluster == clusters[i].Name })]
			if t.work == nil {
				continue
			}
			current := t.work.Annotations[workv1alpha1.AnnotationRevision] == t.rendered.Hash
			clusters[i].Hash = t.work.Annotations[workv1alpha1.AnnotationRevision]
			if current {
				clusters[i].Hash = targetHash
				clusters[i].Healthy, _ = workHealthy(t.work)
			}
		}
		var prev *workv1alpha1.RolloutStatus
		revision := int64(1)
		if i := slices.IndexFunc(fresh.Status.Rollouts, func(pr addonv1alpha1.PlacementRollout) bool {
			return pr.Name == p.strategy.Name && pr.Namespace == p.strategy.Namespace
		}); i >= 0 {
			prev = &fresh.Status.Rollouts[i].Rollout
			revision = prev.TargetRevision
			if prev.TargetHash != targetHash {
				revision++
			}
		}
		d, err := rollout.Plan(rollout.Input{Strategy: p.strategy.RolloutStrategy, Groups: p.Groups, Clusters: clusters, Previous: prev,
			TargetHash: targetHash, TargetRevision: revision, Now: r.now()})
		if err != nil {
			return out, err
		}
		for c := range d.OnTarget {
			out.onTarget[c] = true
		}
		if len(d.Started) > 0 {
			r.Recorder.Eventf(a, nil, corev1.EventTypeNormal, "RolloutWave", "Rollout", "placement %s/%s, wave %d: revision %d to %s",
				p.strategy.Namespace, p.strategy.Name, d.Status.Wave, d.Status.TargetRevision, strings.Join(d.Started, ", "))
		}
		if !d.Complete {
			out.incomplete = append(out.incomplete, p.strategy.Namespace+"/"+p.strategy.Name)
		}
		if d.RequeueAfter > 0 && (out.requeue == 0 || d.RequeueAfter < out.requeue) {
			out.requeue = d.RequeueAfter
		}
		out.rollouts = append(out.rollouts, addonv1alpha1.PlacementRollout{
			ConfigName: addonv1alpha1.ConfigName{Name: p.strategy.Name, Namespace: p.strategy.Namespace}, Rollout: d.Status})
	}
	return out, nil
}
