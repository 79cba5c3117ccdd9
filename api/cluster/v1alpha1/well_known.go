package v1alpha1

import (
	"fmt"
	"strings"
)

// AnnotationUnjoin on a Cluster says what becomes of the objects Flotilla placed in the member when the
// Cluster is deleted: `flotilla unjoin` sets it before it deletes the Cluster. The hub's deregistration
// (FinalizerDeregistration) and the executor, before it finalizes a Work of the cluster, read it. A Cluster
// deleted without it (kubectl delete) keeps them: UnjoinKeepResources.
const AnnotationUnjoin = "cluster.flotilla.io/unjoin"

// Values of AnnotationUnjoin.
const (
	// UnjoinKeepResources leaves every member object where it is; the cluster's Works are released.
	UnjoinKeepResources = "KeepResources"
	// UnjoinDeleteResources deletes the member objects of the cluster's Works (by the usual deletion rules)
	// before the Cluster goes.
	UnjoinDeleteResources = "DeleteResources"
)

// FinalizerDeregistration keeps a deleted Cluster until the hub has done what must happen before it goes:
// with UnjoinDeleteResources, the member objects of its Works deleted (by the cluster's agent, or for a Push
// cluster by the hub); then a Push cluster's credentials Secret is deleted. Once the Cluster is gone, what it
// owns goes (its namespace with its Works, Lease and agent Role; its agent's ClusterRole), the hub releasing
// the Works. The Deleting condition says what it waits for. Whoever deletes the Cluster (flotilla unjoin,
// kubectl delete), the same steps run, and a hub that restarts halfway resumes them.
const FinalizerDeregistration = "cluster.flotilla.io/deregistration"

// SystemNamespace holds the hub's own objects: the controllers' leader Lease and push credentials.
const SystemNamespace = "flotilla-system"

// Annotations Flotilla keeps on a Cluster.
const (
	// AnnotationAgentUser on a Pull Cluster is the user name of its current agent; the hub authorizes only it
	// and approves a renewal only for it. A Cluster without it predates registrations and trusts the user
	// system:flotilla:agent:NAME.
	AnnotationAgentUser = "flotilla.io/agent-user"
	// AnnotationJoinDropped on a Cluster lists what its join asked for and the token did not allow.
	AnnotationJoinDropped = "flotilla.io/join-dropped"
	// AnnotationRegistrationRequest on a Pull Cluster is the UID of the join request (CSR) that registered its
	// current agent, and AnnotationAgentKey the SHA-256 of that request's public key ("sha256:HEX"). The
	// approver finishes only that request: another request that copies the agent user name (which anyone who
	// reads Clusters sees) is not the registration.
	AnnotationRegistrationRequest = "flotilla.io/registration-request"
	AnnotationAgentKey            = "flotilla.io/agent-key"
	// AnnotationAgentCertificateExpires on a Pull Cluster is when its agent's last certificate the hub signed
	// expires (RFC 3339): an agent that has not renewed by then must join again (`describe cluster` says so).
	AnnotationAgentCertificateExpires = "flotilla.io/agent-certificate-expires"
)

// AnnotationCluster marks each object of a fleet-wide read (the proxy's fleet list, `flotilla get KIND -o
// yaml|json`) with the name of the cluster it was read from. It is set on the copy the reader gets, never
// written to a member.
const AnnotationCluster = "flotilla.io/cluster"

// clusterNamespacePrefix starts the name of every cluster's namespace on the hub.
const clusterNamespacePrefix = "flotilla-cluster-"

// ClusterNamespace is the hub namespace that holds a cluster's Works and Lease.
func ClusterNamespace(cluster string) string { return clusterNamespacePrefix + cluster }

// ClusterOfNamespace returns the cluster whose namespace ns is.
func ClusterOfNamespace(ns string) (string, bool) {
	name, ok := strings.CutPrefix(ns, clusterNamespacePrefix)
	return name, ok && name != ""
}

// messageListLength is how many clusters a condition or event message names before it says how many more:
// a message about a fleet of thousands must stay within the 32 KiB the API server allows a condition message.
const messageListLength = 10

// ListInMessage joins cluster names (or per-cluster phrases) for a condition or event message, naming at most
// the first ten and counting the rest.
func ListInMessage(items []string) string {
	if len(items) <= messageListLength {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:messageListLength], ", "), len(items)-messageListLength)
}

// CredentialFields are the spec fields (by their JSON names) that make a Cluster's credential: where the hub
// sends a push member's requests (and with them Works and Secrets), through which proxy, with which Secret
// and TLS checks, and which member (ID) it must find there. Only administrators may set or change them (the
// hub's admission), and the hub reaches the member anew when one changes (Credential).
var CredentialFields = []string{"apiEndpoint", "insecureSkipTLSVerification", "proxyURL", "secretRef", "id"}

// Credential joins the values of the spec's CredentialFields: two specs with the same Credential send the hub
// to the same member in the same way.
func (s *ClusterSpec) Credential() string {
	ref := ""
	if s.SecretRef != nil {
		ref = s.SecretRef.Namespace + "/" + s.SecretRef.Name
	}
	return strings.Join([]string{s.APIEndpoint, fmt.Sprint(s.InsecureSkipTLSVerification), s.ProxyURL, ref, s.ID}, "|")
}
