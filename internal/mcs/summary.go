package mcs

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// Roles of a cluster in an export's summary.
const (
	RoleProvider = "provider"
	RoleConsumer = "consumer"
)

// ClusterSummary is one cluster's part in an export.
type ClusterSummary struct {
	Cluster string
	Role    string
	// Endpoints a provider reported, or a consumer was given.
	Endpoints int
	// State: a provider's endpoints are imported or withdrawn; a consumer's Work is applied or not yet.
	State string
}

// Summarize reads from the hub what an export's providers report and what its consumers were given, for
// `flotilla status serviceexport/NAME`.
func Summarize(ctx context.Context, c client.Reader, export *mcsv1alpha1.ServiceExport) ([]ClusterSummary, error) {
	selector := client.MatchingLabels{LabelExportNamespace: export.Namespace, LabelServiceName: export.Name}
	var out []ClusterSummary
	requests := &mcsv1alpha1.ServiceExportList{}
	if err := c.List(ctx, requests, selector); err != nil {
		return nil, err
	}
	reported := &discoveryv1.EndpointSliceList{}
	if err := c.List(ctx, reported, selector); err != nil {
		return nil, err
	}
	imp := &mcsv1alpha1.ServiceImport{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(export), imp); client.IgnoreNotFound(err) != nil {
		return nil, err
	}
	for _, r := range requests.Items {
		cluster, ok := clusterv1alpha1.ClusterOfNamespace(r.Namespace)
		if !ok {
			continue
		}
		s := ClusterSummary{Cluster: cluster, Role: RoleProvider, State: "withdrawn"}
		if slices.ContainsFunc(imp.Status.Clusters, func(c mcsv1alpha1.ClusterStatus) bool { return c.Cluster == cluster }) {
			s.State = "imported"
		}
		for _, slice := range reported.Items {
			if slice.Namespace == r.Namespace {
				s.Endpoints += len(slice.Endpoints)
			}
		}
		out = append(out, s)
	}
	works := &workv1alpha1.WorkList{}
	if err := c.List(ctx, works, selector); err != nil {
		return nil, err
	}
	for _, w := range works.Items {
		cluster, ok := clusterv1alpha1.ClusterOfNamespace(w.Namespace)
		if !ok {
			continue
		}
		s := ClusterSummary{Cluster: cluster, Role: RoleConsumer, State: "applying"}
		if meta.IsStatusConditionTrue(w.Status.Conditions, workv1alpha1.WorkConditionApplied) {
			s.State = "applied"
		}
		for _, m := range w.Spec.Workload.Manifests {
			slice := &discoveryv1.EndpointSlice{}
			if err := json.Unmarshal(m.Raw, slice); err == nil && slice.Kind == "EndpointSlice" {
				s.Endpoints += len(slice.Endpoints)
			}
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b ClusterSummary) int {
		return cmp.Or(cmp.Compare(a.Role, b.Role), cmp.Compare(a.Cluster, b.Cluster))
	})
	return out, nil
}
