package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterProxyOptions is what a connect request of the group (clusters/NAME/proxy, clusters/NAME/attach,
// fleet/list) carries besides its body: the member path below the subresource.
// +kubebuilder:object:root=true
type ClusterProxyOptions struct {
	metav1.TypeMeta `json:",inline"`

	// Path is the member API server path the request goes to, such as /api/v1/pods.
	Path string `json:"path,omitempty"`
}
