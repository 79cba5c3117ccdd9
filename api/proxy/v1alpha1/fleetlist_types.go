package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FleetList is the answer of a fleet list: the items of every cluster that answered, each annotated with
// clusterv1alpha1.AnnotationCluster, and one entry per cluster read or left out. The hub writes it as it reads
// the clusters, and callers decode it as JSON; it is never held in a scheme, so it has no deepcopy (which
// controller-gen cannot write for items that are plain JSON objects).
// +kubebuilder:object:generate=false
type FleetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`

	// Items are the objects, cluster by cluster in the order of Clusters, each in its member's order.
	Items []map[string]any `json:"items"`
	// Clusters says, for each selected cluster sorted by name, what its read gave. Without the clusters
	// parameter, the clusters the caller may not reach are here only if the caller may list the hub's
	// Clusters.
	Clusters []FleetListCluster `json:"clusters"`
}

// FleetListCluster is what one cluster gave to a fleet list.
type FleetListCluster struct {
	// Name is the cluster's name.
	Name string `json:"name"`
	// Items is how many of the list's items came from it.
	Items int `json:"items"`
	// ResourceVersion is the member's resourceVersion of its list, to watch from.
	ResourceVersion string `json:"resourceVersion,omitempty"`
	// Truncated says the member has more items than the limit the list passed on.
	Truncated bool `json:"truncated,omitempty"`
	// Error, when set, is why the cluster contributed no items: 403 Forbidden when the caller may not use
	// clusters/proxy on it (it was not read), the member's own Status when it refused, 503 when the hub
	// cannot reach it, 504 Timeout when it did not answer within the cluster timeout, 507 when its answer
	// was larger than the hub reads.
	Error *metav1.Status `json:"error,omitempty"`
}
