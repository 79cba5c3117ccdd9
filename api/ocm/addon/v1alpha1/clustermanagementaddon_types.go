package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ClusterManagementAddOn declares an add-on: its name and description, the configuration kinds it takes with
// their defaults (for a template add-on, the AddOnTemplate it installs), and which clusters it is installed
// on. Mirrored onto the addon.flotilla.io AddOn of the same name.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=cma;cmas
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Display Name",type=string,JSONPath=`.spec.addOnMeta.displayName`
// +kubebuilder:printcolumn:name="Strategy",type=string,JSONPath=`.spec.installStrategy.type`
type ClusterManagementAddOn struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec declares the add-on.
	// +required
	Spec ClusterManagementAddOnSpec `json:"spec"`

	// Status is how the add-on's installation progresses, per placement.
	// +optional
	Status ClusterManagementAddOnStatus `json:"status,omitempty"`
}

// ClusterManagementAddOnSpec declares an add-on.
type ClusterManagementAddOnSpec struct {
	// AddOnMeta is the add-on's name and description for people.
	// +optional
	AddOnMeta AddOnMeta `json:"addOnMeta,omitempty"`

	// SupportedConfigs are the configuration kinds the add-on takes, each with its default. A template add-on
	// names its AddOnTemplate here (group addon.open-cluster-management.io, resource addontemplates); the
	// other kind Flotilla takes is addondeploymentconfigs.
	// +optional
	// +listType=map
	// +listMapKey=group
	// +listMapKey=resource
	// +kubebuilder:validation:MaxItems=8
	SupportedConfigs []ConfigMeta `json:"supportedConfigs,omitempty"`

	// InstallStrategy says which clusters the add-on is installed on. Default Manual.
	// +optional
	// +kubebuilder:default={type: Manual}
	InstallStrategy InstallStrategy `json:"installStrategy,omitempty"`
}

// AddOnMeta is an add-on's name and description for people.
type AddOnMeta struct {
	// DisplayName is the add-on's name for people.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	DisplayName string `json:"displayName,omitempty"`

	// Description says what the add-on does.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Description string `json:"description,omitempty"`
}

// ConfigMeta is a configuration kind an add-on takes, with its default object.
type ConfigMeta struct {
	ConfigGroupResource `json:",inline"`

	// DefaultConfig is the object clusters use unless their placement or ManagedClusterAddOn names another.
	// +optional
	DefaultConfig *ConfigReferent `json:"defaultConfig,omitempty"`
}

// InstallStrategy says which clusters an add-on is installed on.
// +kubebuilder:validation:XValidation:rule="self.type != 'Placements' || (has(self.placements) && size(self.placements) > 0)",message="installStrategy Placements needs at least one placement"
type InstallStrategy struct {
	// Type is Manual (a ManagedClusterAddOn created per cluster) or Placements (every cluster the placements
	// decide on).
	// +optional
	// +kubebuilder:validation:Enum=Manual;Placements
	// +kubebuilder:default=Manual
	Type string `json:"type"`

	// Placements install the add-on on the clusters they decide on: Flotilla's cluster.flotilla.io Placements
	// of these names and namespaces.
	// +optional
	// +listType=map
	// +listMapKey=namespace
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	Placements []PlacementStrategy `json:"placements,omitempty"`
}

// PlacementRef names a Placement.
type PlacementRef struct {
	// Namespace of the Placement.
	// +required
	// +kubebuilder:validation:MinLength=1
	Namespace string `json:"namespace"`

	// Name of the Placement.
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// PlacementStrategy is one placement an add-on is installed by, the configuration its clusters take, and how
// a change reaches them.
type PlacementStrategy struct {
	PlacementRef `json:",inline"`

	// Configs replace the defaults of supportedConfigs on this placement's clusters (addondeploymentconfigs
	// only: one template serves every placement).
	// +optional
	// +kubebuilder:validation:MaxItems=8
	Configs []AddOnConfig `json:"configs,omitempty"`

	// RolloutStrategy says how a change reaches this placement's clusters. Default All.
	// +optional
	RolloutStrategy *RolloutStrategy `json:"rolloutStrategy,omitempty"`
}

// RolloutStrategy is OCM's rollout strategy: All, Progressive or ProgressivePerGroup, each with its tuning.
type RolloutStrategy struct {
	// Type is All, Progressive or ProgressivePerGroup.
	// +optional
	// +kubebuilder:validation:Enum=All;Progressive;ProgressivePerGroup
	// +kubebuilder:default=All
	Type string `json:"type,omitempty"`

	// All tunes an All rollout.
	// +optional
	All *RolloutAll `json:"all,omitempty"`

	// Progressive tunes a Progressive rollout.
	// +optional
	Progressive *RolloutProgressive `json:"progressive,omitempty"`

	// ProgressivePerGroup tunes a ProgressivePerGroup rollout.
	// +optional
	ProgressivePerGroup *RolloutProgressivePerGroup `json:"progressivePerGroup,omitempty"`
}

// RolloutConfig is the tuning every rollout type shares.
type RolloutConfig struct {
	// MinSuccessTime is how long a cluster must stay healthy on the new revision to count as succeeded.
	// +optional
	MinSuccessTime metav1.Duration `json:"minSuccessTime,omitempty"`

	// ProgressDeadline is how long a cluster may take to become healthy on the new revision, or None.
	// +optional
	// +kubebuilder:validation:Pattern=`^(([0-9])+[h|m|s])|None$`
	ProgressDeadline string `json:"progressDeadline,omitempty"`

	// MaxFailures is how many clusters may fail before the rollout stops: a count or a percentage.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^((100|[0-9]{1,2})%|[0-9]+)$`
	MaxFailures *intstr.IntOrString `json:"maxFailures,omitempty"`
}

// RolloutAll tunes an All rollout.
type RolloutAll struct {
	RolloutConfig `json:",inline"`
}

// RolloutProgressive tunes a Progressive rollout.
type RolloutProgressive struct {
	RolloutConfig `json:",inline"`

	// MandatoryDecisionGroups are updated first, and must succeed before any other cluster is updated.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	MandatoryDecisionGroups []MandatoryDecisionGroup `json:"mandatoryDecisionGroups,omitempty"`

	// MaxConcurrency is how many clusters are updated at once: a count or a percentage.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^((100|[0-9]{1,2})%|[0-9]+)$`
	MaxConcurrency *intstr.IntOrString `json:"maxConcurrency,omitempty"`
}

// RolloutProgressivePerGroup tunes a ProgressivePerGroup rollout.
type RolloutProgressivePerGroup struct {
	RolloutConfig `json:",inline"`

	// MandatoryDecisionGroups are updated first, and must succeed before any other cluster is updated.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	MandatoryDecisionGroups []MandatoryDecisionGroup `json:"mandatoryDecisionGroups,omitempty"`
}

// MandatoryDecisionGroup names a decision group by name or index.
type MandatoryDecisionGroup struct {
	// GroupName is the group's name.
	// +optional
	GroupName string `json:"groupName,omitempty"`

	// GroupIndex is the group's place in order, from 0.
	// +optional
	// +kubebuilder:validation:Minimum=0
	GroupIndex *int32 `json:"groupIndex,omitempty"`
}

// ClusterManagementAddOnStatus is how an add-on's installation progresses.
type ClusterManagementAddOnStatus struct {
	// InstallProgressions are, per placement, how the add-on's last change reaches its clusters.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	InstallProgressions []InstallProgression `json:"installProgressions,omitempty"`
}

// InstallProgression is how an add-on's last change reaches one placement's clusters.
type InstallProgression struct {
	PlacementRef `json:",inline"`

	// Conditions: Progressing.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true

// ClusterManagementAddOnList is a list of ClusterManagementAddOns.
type ClusterManagementAddOnList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterManagementAddOn `json:"items"`
}
