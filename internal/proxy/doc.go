// Package proxy is the hub's way to its members' API servers: it serves the aggregated API group
// proxy.flotilla.io in the hub process, registered as an APIService in the hub's kube-apiserver. The group's
// paths and wire types (ClusterProxyOptions, FleetList) are API, in api/proxy/v1alpha1:
//
//	/apis/proxy.flotilla.io/v1alpha1/clusters               get and list: the hub's Clusters
//	/apis/proxy.flotilla.io/v1alpha1/clusters/NAME/proxy/P  the member's API server at path P
//	/apis/proxy.flotilla.io/v1alpha1/clusters/NAME/attach   the tunnel of NAME's agent (tunnel.go)
//	/apis/proxy.flotilla.io/v1alpha1/fleet/list/P           GET of the collection P in every cluster
//
// The hub's kube-apiserver authenticates the caller (any way the hub accepts) and passes the identity on in
// the front proxy's headers; this server trusts them from the front proxy's client certificate only
// (delegated authentication) and asks the hub's RBAC whether the caller may use clusters/proxy on NAME
// (delegated authorization). The member then sees the same user, groups, uid and extras by impersonation,
// under the hub's own credential for that member, so the member's RBAC decides what the caller may do
// there. The caller's Authorization header is never forwarded, and a request that names an identity to
// impersonate is refused (the hub's own impersonation filter has already handled hub-side impersonation).
//
// # The seam: Backend
//
// How the proxy reaches a member is a Backend, chosen by the Cluster's sync mode (Backends):
//
//	type Backend interface {
//		For(ctx context.Context, cluster *clusterv1alpha1.Cluster) (*Target, error)
//	}
//
// A Target is the member's base URL with two transports that authenticate as the hub: one for ordinary
// requests and watches, one for protocol upgrades (exec, attach, port-forward). TargetFor builds both from a
// rest.Config; a tunnel gives that config a Dial that opens connections through the tunnel. PushBackend
// serves push members from the credentials in their Secret (which need the right to impersonate users,
// groups, uids and userextras), holding their Targets in a members.Cache as every user of push credentials
// on the hub holds its clients. Pull members are reached through the tunnel their agent opens: until a
// Backend for them is set in Backends.Pull, a request to one gets 503 with a Status that says there is no
// tunnel for that cluster. A Backend's errors that are API statuses reach the caller as they are.
//
// # Fleet lists
//
// fleet/list/P (P a collection: /api/V[/namespaces/NS]/R or /apis/G/V[/namespaces/NS]/R) reads P in every
// cluster, or those named by ?clusters=a,b, in parallel, each within ?clusterTimeout (default 10 s), the
// other query parameters forwarded. Each cluster is authorized as a request to clusters/NAME/proxy would be
// (get on clusters/proxy, a SubjectAccessReview through the delegated authorizer) and read as the caller by
// impersonation through the same Backends; a cluster the caller may not reach is not read. The answer is a
// proxyv1alpha1.FleetList: the items of the clusters that answered, each annotated with
// clusterv1alpha1.AnnotationCluster, and per cluster its item count and resourceVersion or the Status of its
// failure (403 not permitted, 503 unreachable, 504 timeout, or the member's own). One cluster's failure never
// fails the list, and the list names a cluster the caller may not reach only when the caller named it or may
// list the hub's Clusters. The hub's kube-apiserver authorizes the request itself as get on fleet/api or
// fleet/apis named list, which the ClusterRole FleetListRole grants the groups the admin chose (the hub's
// --fleet-user-groups).
package proxy
