package v1alpha1

// LabelClusterSet marks a namespace that holds the ClusterProfiles of one ClusterSet; its value is the set's
// name (the KEP's label). Flotilla puts it on the namespaces ClusterSetNamespace names, and on the profiles
// in them.
const LabelClusterSet = "clusterset.multicluster.x-k8s.io"

// The names of the properties Flotilla publishes in a ClusterProfile's status. The KEP leaves property names
// to the cluster manager; these are the Kubernetes well-known names where one exists.
const (
	// PropertyClusterSet is the cluster's exclusive ClusterSet (the About API's name, as in the KEP's example).
	PropertyClusterSet = "clusterset.k8s.io"
	// PropertyRegion is the cluster's region (the Cluster's spec.region).
	PropertyRegion = "topology.kubernetes.io/region"
	// PropertyZones are the zones the cluster spans, comma-separated (the Cluster's spec.zones).
	PropertyZones = "topology.kubernetes.io/zone"
	// PropertyProvider is the cloud or infrastructure provider (the Cluster's spec.provider); Kubernetes has
	// no well-known name for it.
	PropertyProvider = "cluster.flotilla.io/provider"
)
