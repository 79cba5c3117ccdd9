// Package registration lets member clusters join the hub, both ends of it side by side.
//
// Pull (agent) registration, kubeadm style: the hub admin creates a bootstrap token (token.go); the agent
// fetches the hub CA anonymously from kube-public/cluster-info and checks it against the pinned hash
// (discovery.go), then files a CertificateSigningRequest with the token (agent.go). The hub's approver
// (approver.go) approves it when the token is valid and the cluster name is free or already this cluster's,
// and creates the Cluster, its namespace, its Lease and RBAC for exactly that identity (clusterobjects.go).
// kube-controller-manager signs the certificate; the agent keeps it in its data directory and renews it
// before it expires with a CSR authenticated by the certificate itself.
//
// Push registration (push.go) stores the member's kubeconfig in a Secret and creates the Cluster.
package registration

import "strings"

const (
	// BootstrapGroup is the extra group of Flotilla's bootstrap tokens; it may only file CSRs.
	BootstrapGroup = "system:bootstrappers:flotilla"
	// AgentGroup is the organization in every agent certificate.
	AgentGroup = "system:flotilla:agents"
	// agentUserPrefix starts the user name (certificate CN) of a cluster's agent.
	agentUserPrefix = "system:flotilla:agent:"

	// Annotations on a join CSR: the member's identity and what the agent asked the Cluster to carry.
	AnnotationClusterID = "flotilla.io/cluster-id"
	AnnotationLabels    = "flotilla.io/cluster-labels"
	AnnotationProvider  = "flotilla.io/cluster-provider"
	AnnotationRegion    = "flotilla.io/cluster-region"
	AnnotationZones     = "flotilla.io/cluster-zones"
	// LabelClusterName marks a CSR with the cluster it is for.
	LabelClusterName = "flotilla.io/cluster-name"

	// ClusterInfoNamespace and ClusterInfoName hold the hub's CA and address for anonymous discovery.
	ClusterInfoNamespace = "kube-public"
	ClusterInfoName      = "cluster-info"
)

// AgentUser is the user name of the agent of cluster name.
func AgentUser(cluster string) string { return agentUserPrefix + cluster }

// ClusterOfUser returns the cluster an agent user name belongs to.
func ClusterOfUser(user string) (string, bool) {
	name, ok := strings.CutPrefix(user, agentUserPrefix)
	return name, ok && name != ""
}

const clusterNamespacePrefix = "flotilla-cluster-"

// ClusterNamespace is the hub namespace that holds a cluster's Works and Lease.
func ClusterNamespace(cluster string) string { return clusterNamespacePrefix + cluster }

// ClusterOfNamespace returns the cluster whose namespace ns is.
func ClusterOfNamespace(ns string) (string, bool) {
	name, ok := strings.CutPrefix(ns, clusterNamespacePrefix)
	return name, ok && name != ""
}
