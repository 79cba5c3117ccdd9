package mirror

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ocmworkv1 "github.com/flotilla-io/flotilla/api/ocm/work/v1"
	ocmworkv1alpha1 "github.com/flotilla-io/flotilla/api/ocm/work/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/rollout"
)

// replicaDecision is what the rollouts of a ManifestWorkReplicaSet's placements decide now.
type replicaDecision struct {
	// onTarget are the clusters that may take the current template.
	onTarget map[string]bool
	// complete names the placements whose rollout is complete.
	complete map[string]bool
	rollouts []ocmworkv1alpha1.PlacementRollout
	requeue  time.Duration
}

// roll decides, per placement, which of its clusters take the current template now, with rollout.Plan. The
// target is the template (its hash names it). A cluster runs it when its ManifestWork was written from it;
// it is healthy only when the ManifestWork's Work carries the template's manifests and rollout.Healthy says
// the Work is applied and healthy at its generation. A cluster decided by several placements is rolled out
// by the first. It fills each placement's clusters.
func (r *ReplicaSets) roll(ctx context.Context, rs *ocmworkv1alpha1.ManifestWorkReplicaSet, placements []*replicaPlacement,
	works map[string]*ocmworkv1.ManifestWork, hash string) (replicaDecision, error) {
	out := replicaDecision{onTarget: map[string]bool{}, complete: map[string]bool{}}
	fresh := &ocmworkv1alpha1.ManifestWorkReplicaSet{}
	if err := r.Reader.Get(ctx, client.ObjectKeyFromObject(rs), fresh); err != nil {
		return out, err
	}
	claimed := map[string]bool{}
	for _, p := range placements {
		for _, c := range p.Clusters() {
			if !claimed[c] {
				claimed[c] = true
				p.clusters = append(p.clusters, c)
			}
		}
		strategy, err := rolloutStrategy(p.ref.RolloutStrategy)
		if err != nil {
			p.invalid = err.Error()
			continue
		}
		if len(p.clusters) == 0 {
			out.complete[p.ref.Name] = true
			continue
		}
		clusters := make([]rollout.Cluster, 0, len(p.clusters))
		for _, name := range p.clusters {
			c, err := r.rolloutCluster(ctx, rs, works[name], name, hash)
			if err != nil {
				return out, err
			}
			clusters = append(clusters, c)
		}
		var prev *workv1alpha1.RolloutStatus
		revision := int64(1)
		if i := slices.IndexFunc(fresh.Status.PlacementRollouts, func(pr ocmworkv1alpha1.PlacementRollout) bool { return pr.Name == p.ref.Name }); i >= 0 {
			prev = &fresh.Status.PlacementRollouts[i].Rollout
			revision = prev.TargetRevision
			if prev.TargetHash != hash {
				revision++
			}
		}
		d, err := rollout.Plan(rollout.Input{Strategy: strategy, Groups: p.Groups, Clusters: clusters, Previous: prev,
			TargetHash: hash, TargetRevision: revision, Now: r.now()})
		if err != nil {
			p.invalid = err.Error()
			continue
		}
		for c := range d.OnTarget {
			out.onTarget[c] = true
		}
		if len(d.Started) > 0 {
			r.Recorder.Eventf(rs, nil, corev1.EventTypeNormal, "RolloutWave", "Rollout", "placement %s, wave %d: revision %d to %s",
				p.ref.Name, d.Status.Wave, d.Status.TargetRevision, strings.Join(d.Started, ", "))
		}
		if d.Failed {
			r.Recorder.Eventf(rs, nil, corev1.EventTypeWarning, "RolloutFailed", "Rollout", "placement %s: revision %d failed on more clusters than maxFailures allows",
				p.ref.Name, d.Status.TargetRevision)
		}
		out.complete[p.ref.Name] = d.Complete
		if d.RequeueAfter > 0 && (out.requeue == 0 || d.RequeueAfter < out.requeue) {
			out.requeue = d.RequeueAfter
		}
		out.rollouts = append(out.rollouts, ocmworkv1alpha1.PlacementRollout{Name: p.ref.Name, Rollout: d.Status})
	}
	return out, nil
}

// rolloutCluster is what the rollout knows of a cluster: the template hash its ManifestWork was written from
// ("" without one), and whether its Work carries that template's manifests and is healthy.
func (r *ReplicaSets) rolloutCluster(ctx context.Context, rs *ocmworkv1alpha1.ManifestWorkReplicaSet, mw *ocmworkv1.ManifestWork, name, hash string) (rollout.Cluster, error) {
	c := rollout.Cluster{Name: name}
	if mw == nil {
		return c, nil
	}
	c.Hash = mw.Annotations[AnnotationTemplateHash]
	if c.Hash != hash {
		return c, nil
	}
	w, err := r.twin(ctx, name, mw.Name)
	if err != nil || w == nil {
		return c, err
	}
	c.Healthy = ManifestWorks{}.Owns(mw, w) && sameManifests(w.Spec.Workload.Manifests, rs.Spec.ManifestWorkTemplate.Workload.Manifests) &&
		rollout.Healthy(w) && everyManifestHealthy(w)
	return c, nil
}

// everyManifestHealthy says whether the member reported every manifest of a Work applied and healthy:
// rollout.Healthy speaks of the first manifest (a binding's template), and a ManifestWork has no first.
func everyManifestHealthy(w *workv1alpha1.Work) bool {
	if len(w.Status.ManifestStatuses) != len(w.Spec.Workload.Manifests) {
		return false
	}
	for _, m := range w.Status.ManifestStatuses {
		if !m.Applied || m.Health != workv1alpha1.ResourceHealthy {
			return false
		}
	}
	return true
}

// sameManifests says whether two lists of manifests hold the same objects, whatever their JSON's spacing and
// key order.
func sameManifests(a, b []workv1alpha1.Manifest) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		var x, y any
		if json.Unmarshal(a[i].Raw, &x) != nil || json.Unmarshal(b[i].Raw, &y) != nil || !reflect.DeepEqual(x, y) {
			return false
		}
	}
	return true
}
