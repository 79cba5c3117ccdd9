package hub

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/clusterset"
)

// CacheOptions are what the controllers' shared cache keeps of the objects it watches: everything but
// managedFields. No controller reads them, yet they are the largest part of many small objects (a Cluster or
// Work written by three managers carries a field set per manager, and server-side apply makes each set
// larger), and at 1,000 clusters the cache holds tens of thousands of objects. An update sent from a cached
// object without managedFields leaves the stored ones as they are.
//
// Of ConfigMaps the cache holds only the hub's cluster-set mode record, which the scheduler reads on every
// pass: a watch of every ConfigMap of the hub would hold users' configuration for nothing.
func CacheOptions() cache.Options {
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			// Of ControllerRevisions, the revisions of templates that roll out in waves.
			&appsv1.ControllerRevision{}: {Label: revisionsOfTemplates},
			&corev1.ConfigMap{}: {
				Namespaces: map[string]cache.Config{clusterv1alpha1.SystemNamespace: {}},
				Field:      fields.OneTermEqualSelector("metadata.name", clusterset.ModeConfigMap),
			},
		},
	}
}

var revisionsOfTemplates = func() labels.Selector {
	exists, err := labels.NewRequirement(workv1alpha1.LabelRevisionOf, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant key
	}
	return labels.NewSelector().Add(*exists)
}()
