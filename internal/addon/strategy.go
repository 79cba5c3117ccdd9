package addon

import (
	"context"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-io/flotilla/api/addon/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/rollout"
)

// placed is what one Placement of an add-on's install strategy decides.
type placed struct {
	strategy *addonv1alpha1.PlacementStrategy
	*rollout.Placed
}

// readPlacements reads the decisions of each Placement of an add-on's Placements strategy.
func (r *Controller) readPlacements(ctx context.Context, a *addonv1alpha1.AddOn) ([]*placed, error) {
	if a.Spec.InstallStrategy.Type != addonv1alpha1.InstallPlacements {
		return nil, nil
	}
	var out []*placed
	for i := range a.Spec.InstallStrategy.Placements {
		s := &a.Spec.InstallStrategy.Placements[i]
		p, err := rollout.ReadPlacement(ctx, r.Client, s.Namespace, s.Name)
		if err != nil {
			return nil, err
		}
		out = append(out, &placed{strategy: s, Placed: p})
	}
	return out, nil
}

// placementOf returns the first placement that decides on the cluster, or nil.
func placementOf(ps []*placed, cluster string) *placed {
	for _, p := range ps {
		if p.Decides(cluster) {
			return p
		}
	}
	return nil
}

// installByStrategy creates a ClusterAddOn on every cluster the placements decide on that has none, and
// deletes those the strategy created where no placement decides any more. It deletes nothing while a
// placement's decision is not settled (missing, not made yet, misconfigured, or read in part) nor when the
// placements together decide on no cluster: an empty decision is never taken over a populated one. A
// ClusterAddOn created by hand is never deleted. It returns what holds deletions back, for the AddOn's
// status, or "".
func (r *Controller) installByStrategy(ctx context.Context, a *addonv1alpha1.AddOn, ps []*placed, current []addonv1alpha1.ClusterAddOn) (string, error) {
	if a.Spec.InstallStrategy.Type != addonv1alpha1.InstallPlacements {
		return "", nil
	}
	have := map[string]*addonv1alpha1.ClusterAddOn{}
	for i := range current {
		if c, ok := clusterv1alpha1.ClusterOfNamespace(current[i].Namespace); ok {
			have[c] = &current[i]
		}
	}
	decided := map[string]bool{}
	hold := ""
	for _, p := range ps {
		if !p.Settled && hold == "" {
			hold = p.Why
		}
		for _, g := range p.Groups {
			for _, c := range g.Clusters {
				decided[c] = true
			}
		}
	}
	if len(decided) == 0 && hold == "" && slices.ContainsFunc(current, func(c addonv1alpha1.ClusterAddOn) bool { return c.Labels[addonv1alpha1.LabelInstalledBy] == a.Name }) {
		hold = "the placements decide on no cluster; the add-on stays where the strategy installed it (delete those ClusterAddOns to disable it)"
	}
	names := make([]string, 0, len(decided))
	for c := range decided {
		names = append(names, c)
	}
	slices.Sort(names)
	for _, cluster := range names {
		if have[cluster] != nil {
			continue
		}
		if ok, err := r.joined(ctx, cluster); err != nil || !ok {
			if err != nil {
				return "", err
			}
			continue
		}
		c := &addonv1alpha1.ClusterAddOn{ObjectMeta: metav1.ObjectMeta{
			Namespace: clusterv1alpha1.ClusterNamespace(cluster), Name: a.Name,
			Labels: map[string]string{addonv1alpha1.LabelAddOn: a.Name, addonv1alpha1.LabelInstalledBy: a.Name},
			// The add-on's deletion takes the ClusterAddOns its strategy created with it.
			OwnerReferences: []metav1.OwnerReference{{APIVersion: addonv1alpha1.GroupVersion.String(), Kind: "AddOn", Name: a.Name, UID: a.UID,
				BlockOwnerDeletion: ptr.To(false)}},
		}}
		if err := r.Client.Create(ctx, c); client.IgnoreAlreadyExists(err) != nil {
			return "", fmt.Errorf("enabling add-on %s on cluster %s: %w", a.Name, cluster, err)
		}
		r.Recorder.Eventf(a, nil, "Normal", "Enabled", "Install", "enabled on cluster %s by its placement", cluster)
	}
	if hold != "" {
		return hold, nil
	}
	for cluster, c := range have {
		if decided[cluster] || c.Labels[addonv1alpha1.LabelInstalledBy] != a.Name || c.DeletionTimestamp != nil {
			continue
		}
		if err := r.Client.Delete(ctx, c, client.Preconditions{UID: &c.UID}); client.IgnoreNotFound(err) != nil {
			return "", fmt.Errorf("disabling add-on %s on cluster %s: %w", a.Name, cluster, err)
		}
		r.Recorder.Eventf(a, nil, "Normal", "Disabled", "Install", "disabled on cluster %s: no placement decides on it any more", cluster)
	}
	return "", nil
}

// joined says whether a cluster exists and is not being deleted: the add-on is installed only there.
func (r *Controller) joined(ctx context.Context, cluster string) (bool, error) {
	c := &clusterv1alpha1.Cluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: cluster}, c); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return c.DeletionTimestamp == nil, nil
}
