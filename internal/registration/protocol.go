// Package registration lets member clusters join the hub, both ends of it side by side.
//
// Pull (agent) registration, kubeadm style: the hub admin creates a bootstrap token (token.go); the agent
// fetches the hub CA anonymously from kube-public/flotilla-cluster-info and checks it against the pinned hashes
// (discovery.go), then files a CertificateSigningRequest with the token (agent.go). The hub's approver
// (approver.go) approves it when the token allows it (token.go: a token may be bound to one name, single-use,
// and say which labels and location a join may claim) and the cluster name is free; it creates the Cluster,
// its namespace, its Lease and RBAC for exactly that identity (register.go, clusterobjects.go). A join for a
// name that is already registered waits for `flotilla accept` (accept.go): nothing in a join request proves
// it comes from the registered member.
//
// The agent's user name carries a random registration suffix that the Cluster records (clusterv1alpha1.AnnotationAgentUser)
// and RBAC is bound to, so an identity belongs to one registration, not to a name: after unjoin, or after an
// accepted re-registration, the old certificate has no rights and cannot renew. kube-controller-manager
// signs the certificate; the agent keeps it in its data directory and renews it before it expires with a CSR
// authenticated by the certificate itself.
//
// Add-on agents get hub identities the same way (addon_approver.go, addon_credentials.go): the agent of a Pull
// cluster, or the hub for a Push cluster, files a CSR for system:flotilla:addon:ADDON:CLUSTER with a key made
// in memory, the approver approves it only for an add-on enabled on that cluster that has a registration, and
// the credential lands in a Secret of the add-on's install namespace in the member, never on the hub.
//
// Push registration (push.go) stores the member's kubeconfig in a Secret and creates the Cluster; the hub reads
// it back, and checks it, through internal/members.
package registration

import (
	"fmt"
	"strings"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

const (
	// BootstrapGroup is the extra group of Flotilla's bootstrap tokens; it may only file CSRs.
	BootstrapGroup = "system:bootstrappers:flotilla"
	// AgentGroup is the organization in every agent certificate.
	AgentGroup = "system:flotilla:agents"
	// agentUserPrefix starts the user name (certificate CN) of a cluster's agent:
	// system:flotilla:agent:CLUSTER:REGISTRATION.
	agentUserPrefix = "system:flotilla:agent:"
	// minRegistrationLength is the shortest registration suffix a join may use: it is what keeps one
	// registration's identity apart from the next one of the same name.
	minRegistrationLength = 16

	// Annotations on a join CSR: the member's identity and what the agent asked the Cluster to carry.
	AnnotationClusterID = "flotilla.io/cluster-id"
	AnnotationLabels    = "flotilla.io/cluster-labels"
	AnnotationProvider  = "flotilla.io/cluster-provider"
	AnnotationRegion    = "flotilla.io/cluster-region"
	AnnotationZones     = "flotilla.io/cluster-zones"
	// LabelClusterName marks a CSR with the cluster it is for.
	LabelClusterName = "flotilla.io/cluster-name"

	// ClusterInfoNamespace and ClusterInfoName hold the hub's CA and address for anonymous discovery. The
	// name is Flotilla's own, not kubeadm's cluster-info, so a hub run on an existing cluster (--kubeconfig)
	// never overwrites what that cluster publishes.
	ClusterInfoNamespace = "kube-public"
	ClusterInfoName      = "flotilla-cluster-info"
)

// AgentUser is the user name of the agent of one registration of cluster.
func AgentUser(cluster, registration string) string {
	return fmt.Sprintf("%s%s:%s", agentUserPrefix, cluster, registration)
}

// ParseAgentUser splits an agent user name into its cluster and registration (empty for a user name from
// before registrations).
func ParseAgentUser(user string) (cluster, registration string, ok bool) {
	rest, ok := strings.CutPrefix(user, agentUserPrefix)
	if !ok || rest == "" {
		return "", "", false
	}
	cluster, registration, _ = strings.Cut(rest, ":")
	return cluster, registration, cluster != ""
}

// ClusterOfUser returns the cluster an agent user name belongs to.
func ClusterOfUser(user string) (string, bool) {
	cluster, _, ok := ParseAgentUser(user)
	return cluster, ok
}

// CurrentAgentUser is the user name of a Pull Cluster's current agent: the one its RBAC is bound to, the
// only one AgentAuthorizer allows and the only one whose renewals are approved.
func CurrentAgentUser(cluster *clusterv1alpha1.Cluster) string {
	if user := cluster.Annotations[clusterv1alpha1.AnnotationAgentUser]; user != "" {
		return user
	}
	return agentUserPrefix + cluster.Name
}
