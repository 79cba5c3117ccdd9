// Package mcs implements the Kubernetes Multi-Cluster Services API (KEP-1645) across Flotilla's
// fleet. A ServiceExport NS/NAME on the hub exports Service NS/NAME from every cluster its binding places it
// in (the providers). The collector, run by each Pull agent and by the hub for Push clusters, reports the
// EndpointSlices of an exported Service in its member into the cluster's namespace on the hub. The export
// controller on the hub merges what the providers export into one ServiceImport and places it, a derived
// Service and the providers' EndpointSlices in the consumer clusters through one Work per consumer.
package mcs

import (
	"fmt"
	"hash/fnv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"
)

const (
	// LabelServiceName and LabelSourceCluster are the KEP's well-known labels: the exported Service an
	// EndpointSlice belongs to and the cluster it comes from.
	LabelServiceName   = mcsv1alpha1.LabelServiceName
	LabelSourceCluster = mcsv1alpha1.LabelSourceCluster
	// LabelExportNamespace is the namespace of the exported Service, on objects that live elsewhere: the
	// export requests and reported EndpointSlices in cluster namespaces, and the consumer Works.
	LabelExportNamespace = "multicluster.flotilla.io/service-namespace"
	// AnnotationConsumers on a ServiceExport lists, comma-separated, the clusters that import the Service.
	// Absent or "*": every cluster of the fleet (the KEP's ClusterSet).
	AnnotationConsumers = "multicluster.flotilla.io/consumers"
	// ManagedBy is the value of endpointslice.kubernetes.io/managed-by on imported EndpointSlices: the
	// member's EndpointSlice controller leaves slices managed by anyone else alone.
	ManagedBy = "multicluster.flotilla.io"
	// Finalizer keeps a ServiceExport until what it placed in consumers is gone.
	Finalizer = "multicluster.flotilla.io/import"
	// DerivedPrefix starts the name of the Service a consumer gets for an import: derived-NAME never
	// collides with a local Service NAME.
	DerivedPrefix = "derived-"
)

// requestName names, in a provider's cluster namespace, the export request of Service namespace/name and
// the prefix of the EndpointSlices reported for it: namespaces hold no dots, so NAMESPACE.NAME is unique.
func requestName(namespace, name string) string { return namespace + "." + name }

// splitRequestName undoes requestName.
func splitRequestName(s string) (namespace, name string, ok bool) {
	return strings.Cut(s, ".")
}

// DerivedName is the name of the Service derived from an import of Service NAME in a consumer.
func DerivedName(name string) string {
	return shorten(DerivedPrefix+name, validation.DNS1035LabelMaxLength)
}

// ConsumerWorkName is the name of the consumer Work of ServiceExport namespace/name in each consumer's
// cluster namespace. It is not a binding's Work and has its own rule, but shares the cluster namespaces with
// them: binding Works are NAMESPACE.NAME-KIND[-HASH] with a kind in lower case (workv1alpha1.WorkName of
// workv1alpha1.BindingName), and no kind is "multicluster".
func ConsumerWorkName(namespace, name string) string {
	return shorten(namespace+"."+name+"-multicluster", validation.DNS1123SubdomainMaxLength)
}

// reportName names the hub copy of member EndpointSlice slice of Service namespace/name.
func reportName(namespace, slice string) string {
	return shorten(namespace+"."+slice, validation.DNS1123SubdomainMaxLength)
}

// importedSliceName names, in a consumer, the copy of a provider's EndpointSlice.
func importedSliceName(cluster, slice string) string {
	return shorten("imported-"+cluster+"-"+slice, validation.DNS1123SubdomainMaxLength)
}

// shorten cuts a name longer than limit and ends it with a hash of the whole, the same every time.
func shorten(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	h := fnv.New64a()
	h.Write([]byte(s))
	suffix := fmt.Sprintf("%016x", h.Sum64())
	return strings.TrimRight(s[:limit-len(suffix)-1], "-.") + "-" + suffix
}
