package proxy

import (
	"net/url"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// GroupName is the API group the hub serves the proxy in.
const GroupName = "proxy.flotilla.io"

// SchemeGroupVersion is the served version of the proxy group.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

// Path is the path, below the hub's URL, of the proxy to cluster's API server.
func Path(cluster string) string {
	return "/apis/" + GroupName + "/" + SchemeGroupVersion.Version + "/clusters/" + cluster + "/proxy"
}

// ClusterProxyOptions is what a clusters/NAME/proxy request carries besides its body: the member path below
// .../proxy.
type ClusterProxyOptions struct {
	metav1.TypeMeta `json:",inline"`

	// Path is the member API server path the request goes to, such as /api/v1/pods.
	Path string `json:"path,omitempty"`
}

// DeepCopyObject copies the options.
func (o *ClusterProxyOptions) DeepCopyObject() runtime.Object {
	c := *o
	return &c
}

// newScheme knows the group's kinds. Clusters are Flotilla's own Cluster type served under this group: the
// group mirrors them, it does not define a kind of its own. The same Go types stand for the internal
// version, so converting between the two is a copy.
func newScheme() (*runtime.Scheme, serializer.CodecFactory, error) {
	s := runtime.NewScheme()
	internal := schema.GroupVersion{Group: GroupName, Version: runtime.APIVersionInternal}
	for _, gv := range []schema.GroupVersion{SchemeGroupVersion, internal} {
		s.AddKnownTypes(gv, &clusterv1alpha1.Cluster{}, &clusterv1alpha1.ClusterList{}, &ClusterProxyOptions{})
	}
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	unversioned := schema.GroupVersion{Version: "v1"}
	metav1.AddToGroupVersion(s, unversioned)
	s.AddUnversionedTypes(unversioned, &metav1.Status{}, &metav1.APIVersions{}, &metav1.APIGroupList{}, &metav1.APIGroup{}, &metav1.APIResourceList{})
	// The path below .../proxy arrives as the query parameter "path" (the API installer puts it there).
	err := s.AddConversionFunc((*url.Values)(nil), (*ClusterProxyOptions)(nil), func(a, b any, _ conversion.Scope) error {
		b.(*ClusterProxyOptions).Path = (*a.(*url.Values)).Get("path")
		return nil
	})
	return s, serializer.NewCodecFactory(s), err
}
