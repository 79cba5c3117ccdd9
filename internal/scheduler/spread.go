package scheduler

import (
	"cmp"
	"fmt"
	"slices"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// groupKey is the value a spread constraint groups a cluster by: its name, region, provider, first zone, or
// a label.
func groupKey(s policyv1alpha1.SpreadConstraint, c *clusterv1alpha1.Cluster) string {
	if s.SpreadByLabel != "" {
		return c.Labels[s.SpreadByLabel]
	}
	switch s.SpreadByField {
	case policyv1alpha1.SpreadByFieldRegion:
		return c.Spec.Region
	case policyv1alpha1.SpreadByFieldProvider:
		return c.Spec.Provider
	case policyv1alpha1.SpreadByFieldZone:
		if len(c.Spec.Zones) > 0 {
			return c.Spec.Zones[0]
		}
		return ""
	}
	return c.Name
}

// spread picks clusters from the ranked feasible list (best first) so that every spread constraint holds:
// at least minGroups and at most maxGroups groups, and, with a cluster constraint, at most its maxGroups
// clusters in all. Without constraints every feasible cluster is kept.
func spread(constraints []policyv1alpha1.SpreadConstraint, ranked []*clusterv1alpha1.Cluster) ([]*clusterv1alpha1.Cluster, error) {
	if len(constraints) == 0 {
		return ranked, nil
	}
	maxClusters, minClusters := len(ranked), 0
	var grouping *policyv1alpha1.SpreadConstraint
	for i := range constraints {
		s := constraints[i]
		if s.SpreadByLabel == "" && (s.SpreadByField == policyv1alpha1.SpreadByFieldCluster || s.SpreadByField == "") {
			if s.MaxGroups > 0 {
				maxClusters = min(maxClusters, s.MaxGroups)
			}
			minClusters = max(minClusters, s.MinGroups)
			continue
		}
		grouping = &constraints[i]
	}
	picked := ranked[:min(len(ranked), maxClusters)]
	if grouping != nil {
		var err error
		if picked, err = pickGroups(*grouping, ranked, maxClusters); err != nil {
			return nil, err
		}
	}
	if len(picked) < minClusters {
		return nil, fmt.Errorf("spread needs at least %d clusters and %d fit", minClusters, len(picked))
	}
	return picked, nil
}

// pickGroups chooses up to maxGroups groups (best cluster first), at least minGroups, then one cluster from
// each chosen group, then more clusters by rank while maxClusters allows.
func pickGroups(s policyv1alpha1.SpreadConstraint, ranked []*clusterv1alpha1.Cluster, maxClusters int) ([]*clusterv1alpha1.Cluster, error) {
	var order []string
	members := map[string][]*clusterv1alpha1.Cluster{}
	for _, c := range ranked {
		k := groupKey(s, c)
		if k == "" {
			continue // a cluster without the field or label belongs to no group
		}
		if _, seen := members[k]; !seen {
			order = append(order, k)
		}
		members[k] = append(members[k], c)
	}
	by := string(s.SpreadByField)
	if s.SpreadByLabel != "" {
		by = "label " + s.SpreadByLabel
	}
	if len(order) == 0 {
		// Spreading over nothing would place the binding nowhere; most likely the label was renamed.
		return nil, fmt.Errorf("spread by %s: no feasible cluster has a value for it", by)
	}
	if len(order) < s.MinGroups {
		return nil, fmt.Errorf("spread by %s needs at least %d groups and %d fit", by, s.MinGroups, len(order))
	}
	if s.MaxGroups > 0 && len(order) > s.MaxGroups {
		order = order[:s.MaxGroups]
	}
	if maxClusters < len(order) {
		return nil, fmt.Errorf("spread by %s over %d groups needs at least as many clusters, but the cluster constraint allows %d",
			by, len(order), maxClusters)
	}
	var picked []*clusterv1alpha1.Cluster
	for _, k := range order {
		picked = append(picked, members[k][0])
	}
	for _, c := range ranked {
		if len(picked) >= maxClusters {
			break
		}
		if slices.Contains(order, groupKey(s, c)) && !slices.Contains(picked, c) {
			picked = append(picked, c)
		}
	}
	slices.SortFunc(picked, func(a, b *clusterv1alpha1.Cluster) int {
		return cmp.Compare(slices.Index(ranked, a), slices.Index(ranked, b))
	})
	return picked, nil
}
