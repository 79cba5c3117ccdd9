// Package scheme builds the runtime.Scheme every Flotilla client uses: the Kubernetes built-in kinds, CRDs,
// and Flotilla's own kinds; and, from an object's kind in that scheme, the objects a controller sends by
// server-side apply (apply.go).
package scheme

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"

	addonv1alpha1 "github.com/flotilla-io/flotilla/api/addon/v1alpha1"
	appsv1alpha1 "github.com/flotilla-io/flotilla/api/apps/v1alpha1"
	autoscalingv1alpha1 "github.com/flotilla-io/flotilla/api/autoscaling/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	inventoryv1alpha1 "github.com/flotilla-io/flotilla/api/inventory/v1alpha1"
	ocmclusterv1beta1 "github.com/flotilla-io/flotilla/api/ocm/cluster/v1beta1"
	ocmclusterv1beta2 "github.com/flotilla-io/flotilla/api/ocm/cluster/v1beta2"
	ocmworkv1 "github.com/flotilla-io/flotilla/api/ocm/work/v1"
	ocmworkv1alpha1 "github.com/flotilla-io/flotilla/api/ocm/work/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// New returns a scheme with the built-in kinds, CustomResourceDefinitions, every Flotilla kind, the
// Multi-Cluster Services kinds and OCM's cluster set and placement kinds (the hub writes OCM's placement decisions) and its work kinds (the hub
// writes a ManifestWorkReplicaSet's ManifestWorks).
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(clusterv1alpha1.AddToScheme(s))
	utilruntime.Must(configv1alpha1.AddToScheme(s))
	utilruntime.Must(policyv1alpha1.AddToScheme(s))
	utilruntime.Must(workv1alpha1.AddToScheme(s))
	utilruntime.Must(mcsv1alpha1.AddToScheme(s))
	utilruntime.Must(inventoryv1alpha1.AddToScheme(s))
	utilruntime.Must(autoscalingv1alpha1.AddToScheme(s))
	utilruntime.Must(addonv1alpha1.AddToScheme(s))
	utilruntime.Must(ocmclusterv1beta1.AddToScheme(s))
	utilruntime.Must(ocmclusterv1beta2.AddToScheme(s))
	utilruntime.Must(ocmworkv1.AddToScheme(s))
	utilruntime.Must(ocmworkv1alpha1.AddToScheme(s))
	utilruntime.Must(appsv1alpha1.AddToScheme(s))
	return s
}
