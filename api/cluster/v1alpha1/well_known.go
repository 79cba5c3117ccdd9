package v1alpha1

// AnnotationUnjoin on a Cluster records that `flotilla unjoin` is removing it and what becomes of the objects
// Flotilla placed in the member: the executor reads it before it finalizes a Work of the cluster.
const AnnotationUnjoin = "cluster.flotilla.io/unjoin"

// Values of AnnotationUnjoin.
const (
	// UnjoinKeepResources leaves every member object where it is; the cluster's Works are released.
	UnjoinKeepResources = "KeepResources"
	// UnjoinDeleteResources deletes the member objects of the cluster's Works (by the usual deletion rules)
	// before the Cluster goes.
	UnjoinDeleteResources = "DeleteResources"
)
