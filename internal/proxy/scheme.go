package proxy

import (
	"net/url"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	proxyv1alpha1 "github.com/flotilla-io/flotilla/api/proxy/v1alpha1"
)

// newScheme knows the group's kinds (proxyv1alpha1). Clusters are Flotilla's own Cluster type served under this group: the
// group mirrors them, it does not define a kind of its own. The same Go types stand for the internal
// version, so converting between the two is a copy.
func newScheme() (*runtime.Scheme, serializer.CodecFactory, error) {
	s := runtime.NewScheme()
	internal := schema.GroupVersion{Group: proxyv1alpha1.GroupName, Version: runtime.APIVersionInternal}
	for _, gv := range []schema.GroupVersion{proxyv1alpha1.GroupVersion, internal} {
		s.AddKnownTypes(gv, &clusterv1alpha1.Cluster{}, &clusterv1alpha1.ClusterList{}, &proxyv1alpha1.ClusterProxyOptions{})
	}
	metav1.AddToGroupVersion(s, proxyv1alpha1.GroupVersion)
	unversioned := schema.GroupVersion{Version: "v1"}
	metav1.AddToGroupVersion(s, unversioned)
	s.AddUnversionedTypes(unversioned, &metav1.Status{}, &metav1.APIVersions{}, &metav1.APIGroupList{}, &metav1.APIGroup{}, &metav1.APIResourceList{})
	// The path below .../proxy arrives as the query parameter "path" (the API installer puts it there).
	err := s.AddConversionFunc((*url.Values)(nil), (*proxyv1alpha1.ClusterProxyOptions)(nil), func(a, b any, _ conversion.Scope) error {
		b.(*proxyv1alpha1.ClusterProxyOptions).Path = (*a.(*url.Values)).Get("path")
		return nil
	})
	return s, serializer.NewCodecFactory(s), err
}
