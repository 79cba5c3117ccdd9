package mirror

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	ocmclusterv1beta1 "github.com/flotilla-io/flotilla/api/ocm/cluster/v1beta1"
	ocmclusterv1beta2 "github.com/flotilla-io/flotilla/api/ocm/cluster/v1beta2"
)

// +kubebuilder:rbac:groups=cluster.open-cluster-management.io,resources=managedclustersets;managedclustersetbindings;placements,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.open-cluster-management.io,resources=managedclustersets/status;managedclustersetbindings/status;placements/status,verbs=update
// +kubebuilder:rbac:groups=cluster.flotilla.io,resources=clustersets;clustersetbindings;placements,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups=cluster.flotilla.io,resources=clustersets/bind,verbs=create

// ocmCluster is OCM's cluster set and placement kinds, with their Flotilla twins of the same name and
// namespace: the sets and bindings are copied as they are (their specs are the same), a Placement's
// tolerations are converted to Flotilla's taints, and each twin's status is copied back in OCM's shape. The
// decisions go the other way (Decisions).
var ocmCluster = []Kind{
	{Peer: ocmclusterv1beta2.GroupVersion.WithKind("ManagedClusterSet"), Twin: clusterv1alpha1.GroupVersion.WithKind("ClusterSet"),
		Status: typedStatus(func(in *clusterv1alpha1.ClusterSetStatus) *ocmclusterv1beta2.ManagedClusterSetStatus {
			return &ocmclusterv1beta2.ManagedClusterSetStatus{Conditions: in.Conditions}
		})},
	{Peer: ocmclusterv1beta2.GroupVersion.WithKind("ManagedClusterSetBinding"), Twin: clusterv1alpha1.GroupVersion.WithKind("ClusterSetBinding"),
		Status: typedStatus(func(in *clusterv1alpha1.ClusterSetBindingStatus) *ocmclusterv1beta2.ManagedClusterSetBindingStatus {
			return &ocmclusterv1beta2.ManagedClusterSetBindingStatus{Conditions: in.Conditions}
		})},
	{Peer: ocmclusterv1beta1.GroupVersion.WithKind("Placement"), Twin: clusterv1alpha1.GroupVersion.WithKind("Placement"),
		Spec: typed(placementSpec), Status: typedStatus(placementStatus)},
}

// placementSpec is the Flotilla Placement of an OCM one.
func placementSpec(_ context.Context, _ client.Reader, p *ocmclusterv1beta1.Placement) (*clusterv1alpha1.PlacementSpec, error) {
	spec, err := p.Spec.Flotilla()
	if err != nil {
		return nil, refuse("%w", err)
	}
	return spec, nil
}

// placementStatus is a Flotilla Placement's status in OCM's shape.
func placementStatus(in *clusterv1alpha1.PlacementStatus) *ocmclusterv1beta1.PlacementStatus {
	out := &ocmclusterv1beta1.PlacementStatus{NumberOfSelectedClusters: in.NumberOfSelectedClusters, Conditions: in.Conditions}
	for _, g := range in.DecisionGroups {
		out.DecisionGroups = append(out.DecisionGroups, ocmclusterv1beta1.DecisionGroupStatus{DecisionGroupIndex: g.DecisionGroupIndex,
			DecisionGroupName: g.DecisionGroupName, Decisions: g.Decisions, ClustersCount: g.ClusterCount})
	}
	return out
}
