package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// AddOn is an extension of the fleet: the manifests it installs in each cluster where it is enabled, how it
// is enabled (by hand or by placement), its configuration, the hub permissions of its agent, and how its
// health is judged. The hub renders its template into one Work per enabled cluster.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,categories=flotilla
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Strategy",type=string,JSONPath=`.spec.installStrategy.type`
// +kubebuilder:printcolumn:name="Enabled",type=integer,JSONPath=`.status.enabledClusters`
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=`.status.availableClusters`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type AddOn struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what the add-on installs, where and how.
	// +required
	Spec AddOnSpec `json:"spec"`

	// Status is where the add-on runs and how its last change is rolling out.
	// +optional
	Status AddOnStatus `json:"status,omitempty"`
}

// AddOnSpec declares an add-on.
type AddOnSpec struct {
	// DisplayName is the add-on's name for people.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	DisplayName string `json:"displayName,omitempty"`

	// Description says what the add-on does.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Description string `json:"description,omitempty"`

	// InstallNamespace is the member namespace the add-on is installed in, unless a ClusterAddOn names
	// another. Default: flotilla-addon-<name>.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	InstallNamespace string `json:"installNamespace,omitempty"`

	// InstallStrategy says which clusters the add-on is enabled on: Manual (a ClusterAddOn created by hand,
	// `flotilla addon enable`) or Placements (every cluster the named Placements decide on).
	// +optional
	InstallStrategy InstallStrategy `json:"installStrategy,omitempty"`

	// Template is what the add-on installs in each cluster.
	// +required
	Template AddOnTemplate `json:"template"`

	// SupportedConfigs are the kinds of configuration object the add-on takes, each with the default every
	// cluster uses unless its placement or its ClusterAddOn names another. Today: addonconfigs of
	// addon.flotilla.io.
	// +optional
	// +listType=map
	// +listMapKey=group
	// +listMapKey=resource
	// +kubebuilder:validation:MaxItems=8
	SupportedConfigs []ConfigMeta `json:"supportedConfigs,omitempty"`

	// Registration, when set, gives the add-on's agent in each cluster a hub identity
	// (system:flotilla:addon:<addon>:<cluster>, group system:flotilla:addon:<addon>) with these permissions;
	// its credential is a Secret in the install namespace of the member, never on the hub.
	// +optional
	Registration *Registration `json:"registration,omitempty"`

	// HealthCheck says how the add-on's health on a cluster is judged.
	// +optional
	HealthCheck HealthCheck `json:"healthCheck,omitempty"`
}

// InstallStrategyType says how an add-on is enabled on clusters.
// +kubebuilder:validation:Enum=Manual;Placements
type InstallStrategyType string

const (
	// InstallManual: the add-on runs where a ClusterAddOn enables it, created by hand.
	InstallManual InstallStrategyType = "Manual"
	// InstallPlacements: the hub enables the add-on on every cluster its Placements decide on, and disables
	// it where they no longer do.
	InstallPlacements InstallStrategyType = "Placements"
)

// InstallStrategy says which clusters an add-on is enabled on and how its changes roll out.
// +kubebuilder:validation:XValidation:rule="self.type != 'Placements' || (has(self.placements) && size(self.placements) > 0)",message="installStrategy Placements needs at least one placement"
// +kubebuilder:validation:XValidation:rule="self.type == 'Placements' || !has(self.placements) || size(self.placements) == 0",message="placements are only read with installStrategy Placements"
type InstallStrategy struct {
	// Type is Manual (the default) or Placements.
	// +optional
	// +kubebuilder:default=Manual
	Type InstallStrategyType `json:"type,omitempty"`

	// Placements enable the add-on on the clusters they decide on, in their namespaces' cluster sets.
	// +optional
	// +listType=map
	// +listMapKey=namespace
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	Placements []PlacementStrategy `json:"placements,omitempty"`
}

// PlacementStrategy is one Placement an add-on is installed by, the configuration its clusters take, and how
// a change reaches them.
type PlacementStrategy struct {
	// Name of the Placement.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Namespace of the Placement.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`

	// Configs replace the supported configs' defaults on this placement's clusters.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	Configs []ConfigReference `json:"configs,omitempty"`

	// RolloutStrategy says how a change of the add-on (its template or configuration) reaches this
	// placement's clusters: All (the default), Progressive or ProgressivePerGroup, by the Placement's decision
	// groups.
	// +optional
	RolloutStrategy *policyv1alpha1.RolloutStrategy `json:"rolloutStrategy,omitempty"`
}

// AddOnTemplate is what an add-on installs in each cluster. Strings in the manifests may hold variables,
// replaced per cluster: {{CLUSTER_NAME}}, {{INSTALL_NAMESPACE}}, {{HUB_URL}}, {{HUB_KUBECONFIG_SECRET}} (the
// name of the Secret holding the agent's hub credential, with registration), and every customizedVariable of
// the cluster's AddOnConfig. Container images are rewritten by its registries.
type AddOnTemplate struct {
	// Manifests are the objects installed in each cluster. Namespaced objects with no namespace go to the
	// install namespace.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	Manifests []workv1alpha1.Manifest `json:"manifests"`
}

// ConfigMeta is a kind of configuration an add-on takes, with its default.
type ConfigMeta struct {
	// Group of the configuration kind.
	// +required
	Group string `json:"group"`

	// Resource of the configuration kind, plural.
	// +required
	Resource string `json:"resource"`

	// DefaultConfig is the configuration object clusters use unless told otherwise.
	// +optional
	DefaultConfig *ConfigName `json:"defaultConfig,omitempty"`
}

// ConfigName names a configuration object.
type ConfigName struct {
	// Name of the object.
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// Namespace of the object.
	// +required
	// +kubebuilder:validation:MinLength=1
	Namespace string `json:"namespace"`
}

// ConfigReference names one configuration object of a supported kind.
type ConfigReference struct {
	// Group of the configuration kind.
	// +required
	Group string `json:"group"`

	// Resource of the configuration kind, plural.
	// +required
	Resource string `json:"resource"`

	ConfigName `json:",inline"`
}

// HubPermissionType says where an add-on agent's hub permission applies.
// +kubebuilder:validation:Enum=CurrentCluster;SingleNamespace
type HubPermissionType string

const (
	// PermissionCurrentCluster binds a ClusterRole in the namespace of the agent's own cluster only.
	PermissionCurrentCluster HubPermissionType = "CurrentCluster"
	// PermissionSingleNamespace binds a role in one named namespace of the hub.
	PermissionSingleNamespace HubPermissionType = "SingleNamespace"
)

// Registration is the hub identity of an add-on's agents and what each may do on the hub.
type Registration struct {
	// HubPermissions are bound to the agent of each cluster. Creating or changing them needs the right to
	// bind the roles they name, as a RoleBinding would.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	HubPermissions []HubPermission `json:"hubPermissions,omitempty"`
}

// HubPermission is one role bound to an add-on agent on the hub.
// +kubebuilder:validation:XValidation:rule="self.type != 'CurrentCluster' || (has(self.currentCluster) && !has(self.singleNamespace))",message="a CurrentCluster permission has currentCluster and no singleNamespace"
// +kubebuilder:validation:XValidation:rule="self.type != 'SingleNamespace' || (has(self.singleNamespace) && !has(self.currentCluster))",message="a SingleNamespace permission has singleNamespace and no currentCluster"
type HubPermission struct {
	// Type is CurrentCluster or SingleNamespace.
	// +required
	Type HubPermissionType `json:"type"`

	// CurrentCluster binds a ClusterRole in the agent's own cluster namespace.
	// +optional
	CurrentCluster *CurrentClusterPermission `json:"currentCluster,omitempty"`

	// SingleNamespace binds a Role or ClusterRole in one namespace.
	// +optional
	SingleNamespace *SingleNamespacePermission `json:"singleNamespace,omitempty"`
}

// CurrentClusterPermission names the ClusterRole bound in the agent's cluster namespace.
type CurrentClusterPermission struct {
	// ClusterRoleName is the ClusterRole bound.
	// +required
	// +kubebuilder:validation:MinLength=1
	ClusterRoleName string `json:"clusterRoleName"`
}

// SingleNamespacePermission binds a role in one namespace of the hub.
type SingleNamespacePermission struct {
	// Namespace the role is bound in; not a cluster namespace (flotilla-cluster-*), which only
	// CurrentCluster reaches.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`

	// RoleRef is the Role (of that namespace) or ClusterRole bound.
	// +required
	RoleRef RoleRef `json:"roleRef"`
}

// RoleRef names a Role or ClusterRole.
type RoleRef struct {
	// Kind is Role or ClusterRole.
	// +required
	// +kubebuilder:validation:Enum=Role;ClusterRole
	Kind string `json:"kind"`

	// Name of the role.
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// HealthCheckMode says where an add-on's health on a cluster comes from.
// +kubebuilder:validation:Enum=Work;Lease
type HealthCheckMode string

const (
	// HealthWork: from the status of the add-on's Work, the interpreter's health of what it installed
	// (Deployments available, and so on).
	HealthWork HealthCheckMode = "Work"
	// HealthLease: from a Lease named after the add-on in the cluster's namespace on the hub, which the
	// add-on's agent renews with its hub identity; needs registration.
	HealthLease HealthCheckMode = "Lease"
)

// HealthCheck says how an add-on's health on a cluster is judged.
type HealthCheck struct {
	// Mode is Work (the default) or Lease.
	// +optional
	// +kubebuilder:default=Work
	Mode HealthCheckMode `json:"mode,omitempty"`

	// LeaseDuration is how long a Lease renewal counts, with mode Lease. Default 60s.
	// +optional
	LeaseDuration *metav1.Duration `json:"leaseDuration,omitempty"`
}

// AddOnStatus is where an add-on runs and how its last change is rolling out.
type AddOnStatus struct {
	// ObservedGeneration is the generation this status speaks of.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// EnabledClusters counts the clusters the add-on is enabled on.
	// +optional
	EnabledClusters int32 `json:"enabledClusters"`

	// AvailableClusters counts the clusters where it is Available.
	// +optional
	AvailableClusters int32 `json:"availableClusters"`

	// Rollouts is, per placement of a Placements strategy, how the last change of the add-on reaches its
	// clusters.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	Rollouts []PlacementRollout `json:"rollouts,omitempty"`

	// Conditions: Progressing (a change is reaching the clusters), Degraded (some cluster is not available).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PlacementRollout is the rollout of an add-on's change to one placement's clusters.
type PlacementRollout struct {
	// Name and Namespace of the Placement.
	ConfigName `json:",inline"`

	// Rollout is where the rollout stands (revisions are the add-on's own, counted from 1).
	// +optional
	Rollout workv1alpha1.RolloutStatus `json:"rollout,omitempty"`
}

// +kubebuilder:object:root=true

// AddOnList is a list of AddOns.
type AddOnList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AddOn `json:"items"`
}
