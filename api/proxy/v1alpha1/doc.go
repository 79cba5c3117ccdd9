// Package v1alpha1 holds proxy.flotilla.io, the hub's way to its members' API servers: an aggregated API
// served by the hub process (internal/proxy) and registered as an APIService in the hub's kube-apiserver. It
// has no CustomResourceDefinitions: its resources are the hub's Clusters, mirrored, and connect subresources.
//
//	/apis/proxy.flotilla.io/v1alpha1/clusters               get and list: the hub's Clusters
//	/apis/proxy.flotilla.io/v1alpha1/clusters/NAME/proxy/P  the member's API server at path P (ClusterProxyPath)
//	/apis/proxy.flotilla.io/v1alpha1/clusters/NAME/attach   the tunnel NAME's agent opens (ClusterAttachPath)
//	/apis/proxy.flotilla.io/v1alpha1/fleet/list/P           GET of the collection P in every cluster (FleetListPath)
//
// This package holds what a caller needs to speak to it: the group, the paths, and the wire types
// (ClusterProxyOptions, FleetList). The package has no +groupName marker on purpose: controller-gen must not
// write CRDs for a group that the hub serves itself.
//
// +kubebuilder:object:generate=true
package v1alpha1
