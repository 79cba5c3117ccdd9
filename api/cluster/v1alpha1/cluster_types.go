package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterSyncMode says who applies a cluster's Works.
// +kubebuilder:validation:Enum=Push;Pull
type ClusterSyncMode string

const (
	// Push: the hub applies Works to the member with credentials from spec.secretRef.
	Push ClusterSyncMode = "Push"
	// Pull: an agent beside the member watches its Works on the hub and applies them.
	Pull ClusterSyncMode = "Pull"
)

// Well-known taints the hub puts on unhealthy clusters, each with effect NoSchedule (new placements stay
// away) and, for failover, NoExecute (bindings move away once their toleration runs out). The hub owns both
// keys: it adds and removes taints with them as the cluster's health changes.
const (
	// TaintClusterNotReady is set while the member's readyz fails.
	TaintClusterNotReady = "cluster.flotilla.io/not-ready"
	// TaintClusterUnreachable is set while the cluster's heartbeat Lease is older than the grace period.
	TaintClusterUnreachable = "cluster.flotilla.io/unreachable"
)

// ClusterConditionReady is the condition type that says whether the member can take workloads.
const ClusterConditionReady = "Ready"

// ClusterConditionFailover is the condition type that says, for an unhealthy cluster, whether the hub
// tainted it NoExecute so that workloads fail over (True, reason Tainted) or holds the taint back and why
// (False: MassFailureGuard, HubStarting, RateLimited). A healthy cluster has none.
const ClusterConditionFailover = "Failover"

// ClusterConditionAPIsComplete is the condition type that says whether status.apiEnablements lists every
// API the member serves. The reporter sets it False when discovery failed for some or all groups; absent
// (a cluster not yet reported, or a hub restored without Cluster status) counts as not complete. Only a
// complete list may take a workload off a cluster for not serving its kind.
const ClusterConditionAPIsComplete = "APIsComplete"

// ClusterConditionCredentialsValid is the condition type of Push clusters that says whether the hub can use
// the credentials in spec.secretRef (False: the Secret is missing, or would make the hub run a command or
// read a file).
const ClusterConditionCredentialsValid = "CredentialsValid"

// ClusterConditionTunnelConnected is the condition type of Pull clusters that says whether the cluster's agent
// holds its tunnel to the hub open (True: the hub reaches the member's API server through it; False: the
// agent is not connected, reason NotConnected). The hub writes it when the tunnel opens or closes.
const ClusterConditionTunnelConnected = "TunnelConnected"

// ClusterConditionDeleting is the condition type of a deleted Cluster whose deregistration waits
// (FinalizerDeregistration): True, reason DeletingMemberObjects while the member objects of some of its Works
// are not reported deleted, with a message that names them. A Cluster that is not being deleted has none.
const ClusterConditionDeleting = "Deleting"

// MaxClusterNameLength is the longest cluster name: flotilla-cluster-<name> must be a valid namespace name
// (63 characters).
const MaxClusterNameLength = 46

// Cluster is a member cluster registered with the hub. Its name is the cluster's name everywhere in Flotilla;
// its Works live in the namespace flotilla-cluster-<name>, so the name is at most 46 characters.
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 46",message="a cluster name is at most 46 characters: flotilla-cluster-<name> must be a valid namespace name"
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=fc;fcluster,categories=flotilla
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.syncMode`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.kubernetesVersion`
// +kubebuilder:printcolumn:name="Provider",type=string,JSONPath=`.spec.provider`,priority=1
// +kubebuilder:printcolumn:name="Region",type=string,JSONPath=`.spec.region`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Cluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired description of the member cluster.
	Spec ClusterSpec `json:"spec"`

	// Status is what the hub last observed of the member cluster.
	// +optional
	Status ClusterStatus `json:"status,omitempty"`
}

// ClusterSpec describes a member cluster: how it is reached and where it runs.
// +kubebuilder:validation:XValidation:rule="self.syncMode != 'Push' || has(self.apiEndpoint)",message="spec.apiEndpoint is required when syncMode is Push"
// +kubebuilder:validation:XValidation:rule="self.syncMode != 'Push' || has(self.secretRef)",message="spec.secretRef is required when syncMode is Push"
type ClusterSpec struct {
	// ID is a unique identifier of the member cluster, such as the UID of its kube-system namespace.
	// It lets the hub notice when a different cluster claims a registered name. Empty means unknown.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	ID string `json:"id,omitempty"`

	// SyncMode says who applies this cluster's Works: the hub (Push) or the cluster's agent (Pull).
	// +required
	SyncMode ClusterSyncMode `json:"syncMode"`

	// APIEndpoint is the URL of the member's kube-apiserver. Required for Push: the hub dials this address
	// (the server of a stored kubeconfig is not used). Informational for Pull.
	// +optional
	// +kubebuilder:validation:Pattern=`^https?://`
	APIEndpoint string `json:"apiEndpoint,omitempty"`

	// SecretRef names the Secret in flotilla-system with the credentials the hub uses to reach a Push member:
	// either key "kubeconfig" (a self-contained kubeconfig: embedded certificates, keys or token; no exec or
	// auth-provider plugin, no file), or key "token" (a bearer token) with optional key "caBundle" (PEM CA
	// certificates that verify the member; default: the system's roots). Unused for Pull clusters.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self.namespace == 'flotilla-system'",message="secretRef must name a Secret in flotilla-system"
	SecretRef *LocalSecretReference `json:"secretRef,omitempty"`

	// InsecureSkipTLSVerification makes the hub skip verifying a Push member's serving certificate (no CA is
	// used then). Default false. The kubeconfig of a Push cluster may not say so itself.
	// +optional
	InsecureSkipTLSVerification bool `json:"insecureSkipTLSVerification,omitempty"`

	// ProxyURL is an HTTP(S) or SOCKS5 proxy the hub uses to reach a Push member. Empty means direct. The
	// kubeconfig of a Push cluster may not name a proxy itself.
	// +optional
	// +kubebuilder:validation:Pattern=`^(https?|socks5)://`
	ProxyURL string `json:"proxyURL,omitempty"`

	// Provider is the cloud or infrastructure provider the cluster runs on, used by placement fieldSelectors
	// and spread constraints.
	// +optional
	Provider string `json:"provider,omitempty"`

	// Region is the region the cluster runs in, used by placement fieldSelectors and spread constraints.
	// +optional
	Region string `json:"region,omitempty"`

	// Zones are the zones the cluster spans, used by placement fieldSelectors and spread constraints.
	// +optional
	// +listType=set
	Zones []string `json:"zones,omitempty"`

	// Taints keep workloads away from the cluster unless their policy tolerates them. Effects are
	// NoSchedule, PreferNoSchedule or NoExecute. The hub itself sets cluster.flotilla.io/not-ready and
	// cluster.flotilla.io/unreachable.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self.all(t, t.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",message="taint effect must be one of NoSchedule, PreferNoSchedule, NoExecute"
	Taints []corev1.Taint `json:"taints,omitempty"`

	// ResourceModels are the grades the member's nodes are sorted into by their free capacity when the member
	// reports it (status.resourceSummary.nodeGroups), Karmada's shape: grade 0 first, each grade with the same
	// resources in the same order, each resource's ranges adjoining from 0 up. A node's grade is the lowest of
	// the grades its free amount of each resource falls in. Empty means DefaultResourceModels (CPU and memory
	// in nine grades, from under 1 CPU and 2Gi to 128 CPU and 512Gi and more). Grades only sort nodes: each
	// grade reports the least free amount of every resource over its nodes, so finer grades make the estimate
	// closer to the truth on fleets of mixed node sizes, never wrong.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	ResourceModels []ResourceModel `json:"resourceModels,omitempty"`
}

// ResourceModel is one grade of node free capacity.
type ResourceModel struct {
	// Grade is the grade's index: 0 for the first, then 1, 2, ... in order.
	// +required
	// +kubebuilder:validation:Minimum=0
	Grade int32 `json:"grade"`

	// Ranges say, per resource, how much free capacity a node of this grade has: at least min, less than max.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	Ranges []ResourceModelRange `json:"ranges"`
}

// ResourceModelRange is the range of one resource in a grade: min ≤ free < max.
type ResourceModelRange struct {
	// Name of the resource, for example cpu, memory or nvidia.com/gpu.
	// +required
	Name corev1.ResourceName `json:"name"`

	// Min is the least free amount of the grade (included).
	// +required
	Min resource.Quantity `json:"min"`

	// Max is the bound of the grade (excluded); the last grade's max stands for no bound.
	// +required
	Max resource.Quantity `json:"max"`
}

// LocalSecretReference names a Secret in a known namespace.
type LocalSecretReference struct {
	// Namespace of the Secret; for a Cluster's secretRef, flotilla-system.
	// +required
	// +kubebuilder:validation:MinLength=1
	Namespace string `json:"namespace"`

	// Name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// ClusterStatus is what the hub observed of a member: its version, capabilities, capacity and health. It is
// written only when something in it changed; liveness is the Lease named after the cluster in its namespace,
// renewed every 10 seconds.
type ClusterStatus struct {
	// Conditions: Ready (True: healthy; False: readyz failing; Unknown: heartbeat lost) and APIsComplete
	// (True: apiEnablements lists every served API; False: discovery failed in part), and for Pull clusters
	// TunnelConnected (True: the agent's tunnel to the hub is open), each with a reason; Failover for an
	// unhealthy cluster, CredentialsValid for a Push one, and Deleting while a deleted cluster is deregistered.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// KubernetesVersion is the member's kube-apiserver version, for example v1.37.2.
	// +optional
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`

	// Platform is the member's os/arch, for example linux/amd64.
	// +optional
	Platform string `json:"platform,omitempty"`

	// AgentVersion is the version of the Flotilla agent (Pull) or hub (Push) that reports this status.
	// +optional
	AgentVersion string `json:"agentVersion,omitempty"`

	// APIEnablements lists every group/version the member serves, with its resources. While the
	// APIsComplete condition is not True, a group/version whose discovery failed keeps its last known entry.
	// +optional
	APIEnablements []APIEnablement `json:"apiEnablements,omitempty"`

	// NodeSummary counts the member's nodes.
	// +optional
	NodeSummary *NodeSummary `json:"nodeSummary,omitempty"`

	// ResourceSummary sums the member's node capacity and what its pods use of it.
	// +optional
	ResourceSummary *ResourceSummary `json:"resourceSummary,omitempty"`

	// PodCIDRs are the IP ranges of the member's pods: its Nodes' spec.podCIDRs, merged into the fewest
	// prefixes that cover exactly the same addresses, for example 10.244.0.0/16. Empty when no Node has one
	// (network plugins that give pods addresses of their own choosing). When there are any, multi-cluster
	// services import only endpoint addresses inside them from this cluster. The member reports them: they
	// bound what its workloads' EndpointSlices can point consumers at, not what its admin can.
	// +optional
	PodCIDRs []string `json:"podCIDRs,omitempty"`

	// Health holds the results of the member's /livez and /readyz endpoints.
	// +optional
	Health *HealthEndpoints `json:"health,omitempty"`
}

// APIEnablement is one group/version the member serves and its resources.
type APIEnablement struct {
	// GroupVersion, for example apps/v1, or v1 for the core group.
	// +required
	GroupVersion string `json:"groupVersion"`

	// Resources served in this group/version.
	// +optional
	Resources []APIResource `json:"resources,omitempty"`
}

// APIResource is one resource of a group/version.
type APIResource struct {
	// Name is the plural resource name, for example deployments.
	// +required
	Name string `json:"name"`

	// Kind is the kind of the resource, for example Deployment.
	// +required
	Kind string `json:"kind"`
}

// NodeSummary counts a member's nodes.
type NodeSummary struct {
	// TotalNum is the number of nodes.
	// +optional
	TotalNum int32 `json:"totalNum,omitempty"`

	// ReadyNum is the number of nodes whose Ready condition is True.
	// +optional
	ReadyNum int32 `json:"readyNum,omitempty"`
}

// ResourceSummary sums a member's resources over its ready nodes.
type ResourceSummary struct {
	// Allocatable is the sum of the ready nodes' allocatable resources.
	// +optional
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`

	// Allocating is the sum of the requests of pods not yet bound to a node.
	// +optional
	Allocating corev1.ResourceList `json:"allocating,omitempty"`

	// Allocated is the sum of the requests of non-terminated pods on ready nodes.
	// +optional
	Allocated corev1.ResourceList `json:"allocated,omitempty"`

	// NodeGroups are the member's resource models: its ready, schedulable nodes grouped by what decides
	// whether a pod may go there (labels and taints) and which extended resources they have, and within a
	// group counted per grade of free capacity (spec.resourceModels). The scheduler estimates from them how
	// many replicas really fit, node by node. At most MaxNodeGroups groups: past that, the smallest groups are
	// merged into one that keeps only their common labels and all their taints.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	NodeGroups []NodeGroup `json:"nodeGroups,omitempty"`
}

// MaxNodeGroups bounds status.resourceSummary.nodeGroups.
const MaxNodeGroups = 64

// NodeGroup is a set of nodes that share labels, taints and extended resources, counted per grade.
type NodeGroup struct {
	// Labels every node of the group has, except kubernetes.io/hostname (one value per node).
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// Taints with effect NoSchedule or NoExecute that every node of the group has.
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`

	// Grades count the group's nodes per grade of free capacity.
	// +required
	Grades []NodeGrade `json:"grades"`
}

// NodeGrade counts the nodes of a group in one grade and says how much each of them has free at least.
type NodeGrade struct {
	// Grade is the grade's index in the cluster's resource models.
	// +required
	Grade int32 `json:"grade"`

	// Count is how many nodes of the group are in the grade.
	// +required
	Count int32 `json:"count"`

	// Free is the least free amount of each resource over those nodes: allocatable minus the requests of
	// their non-terminated pods, with pods counted as a resource.
	// +optional
	Free corev1.ResourceList `json:"free,omitempty"`
}

// HealthEndpoints holds the results of a member's health endpoints: "ok", or the failure text.
type HealthEndpoints struct {
	// Livez is the result of GET /livez.
	// +optional
	Livez string `json:"livez,omitempty"`

	// Readyz is the result of GET /readyz.
	// +optional
	Readyz string `json:"readyz,omitempty"`
}

// ClusterList is a list of Clusters.
// +kubebuilder:object:root=true
type ClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Cluster `json:"items"`
}
