package v1alpha1

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group the hub serves the proxy in.
const GroupName = "proxy.flotilla.io"

// GroupVersion is the served version of the proxy group.
var GroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

// The group's resources and subresources.
const (
	// ResourceClusters mirrors the hub's Clusters; its subresources lead to the members.
	ResourceClusters = "clusters"
	// SubresourceProxy of a cluster is its member's API server, reached as the caller.
	SubresourceProxy = "proxy"
	// SubresourceAttach of a cluster is the connect subresource its agent opens its tunnel on. It is named
	// attach, not tunnel, because kube-apiserver treats a fixed list of subresources (attach, exec, log,
	// portforward, proxy) as long-running: any other one is cut by the hub's request timeout and holds a seat
	// of API Priority and Fairness for as long as it lasts, so a tunnel per member would use up the seats of
	// the level agents fall in.
	SubresourceAttach = "attach"
	// ResourceFleet serves fleet-wide reads; FleetListName is the only name it has.
	ResourceFleet = "fleet"
	FleetListName = "list"
)

// ClusterProxyPath is the path, below the hub's URL, of the proxy to cluster's API server.
func ClusterProxyPath(cluster string) string {
	return "/apis/" + GroupVersion.String() + "/" + ResourceClusters + "/" + cluster + "/" + SubresourceProxy
}

// ClusterAttachPath is the path, below the hub's URL, that cluster's agent opens its tunnel on.
func ClusterAttachPath(cluster string) string {
	return "/apis/" + GroupVersion.String() + "/" + ResourceClusters + "/" + cluster + "/" + SubresourceAttach
}

// FleetListPath is the path, below the hub's URL, of the fleet list of the member collection at memberPath
// (such as /api/v1/pods or /apis/apps/v1/namespaces/web/deployments).
func FleetListPath(memberPath string) string {
	return "/apis/" + GroupVersion.String() + "/" + ResourceFleet + "/" + FleetListName + "/" + strings.TrimPrefix(memberPath, "/")
}
