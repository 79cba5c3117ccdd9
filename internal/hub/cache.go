package hub

import (
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// CacheOptions are what the controllers' shared cache keeps of the objects it watches: everything but
// managedFields. No controller reads them, yet they are the largest part of many small objects (a Cluster or
// Work written by three managers carries a field set per manager, and server-side apply makes each set
// larger), and at 1,000 clusters the cache holds tens of thousands of objects. An update sent from a cached
// object without managedFields leaves the stored ones as they are.
func CacheOptions() cache.Options {
	return cache.Options{DefaultTransform: cache.TransformStripManagedFields()}
}
