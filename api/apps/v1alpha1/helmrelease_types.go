package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels the hub puts on every object rendered from a HelmRelease's chart, so that a member's objects can
// be traced to their release (`kubectl get all -l apps.flotilla.io/release=NAME`).
const (
	// LabelRelease is the HelmRelease's name (also .Release.Name in the chart's templates).
	LabelRelease = "apps.flotilla.io/release"
	// LabelReleaseNamespace is the HelmRelease's namespace on the hub.
	LabelReleaseNamespace = "apps.flotilla.io/release-namespace"
	// LabelChart is the chart's name.
	LabelChart = "apps.flotilla.io/chart"
	// LabelChartVersion is the chart's version, a '+' written '_' (as in Helm's helm.sh/chart label).
	LabelChartVersion = "apps.flotilla.io/chart-version"
)

// ConditionRendered on a HelmRelease (and on its binding) is False, with Helm's message, when the chart
// could not be fetched or rendered for some cluster; those clusters keep what they ran.
const ConditionRendered = "Rendered"

// HelmRelease is a Helm chart as a template: a PropagationPolicy places it, OverridePolicies change it per
// cluster (its values above all), and the hub renders the chart for each cluster with the Helm SDK and
// sends the member the rendered objects, never the HelmRelease. A new version or new values roll out as any
// template change does. Its status says which chart version each cluster runs and how healthy it is.
// The fields are Clusternet's HelmChart's where they fit (repo, chart, version, targetNamespace), with the
// values in the release itself.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,categories=flotilla,shortName=hr
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Chart",type=string,JSONPath=`.spec.chart`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Rendered",type=string,JSONPath=`.status.conditions[?(@.type=="Rendered")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type HelmRelease struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says which chart, which version and which values.
	Spec HelmReleaseSpec `json:"spec"`

	// Status is the fleet's view of the release, written by the hub.
	// +optional
	Status HelmReleaseStatus `json:"status,omitempty"`
}

// HelmReleaseSpec is a chart, where it comes from and how it is rendered. The chart comes from exactly one
// source: a repository (repo with chart and version) or a ConfigMap of the release's namespace (configMapRef).
// +kubebuilder:validation:XValidation:rule="has(self.repo) != has(self.configMapRef)",message="exactly one chart source: repo (with chart and version) or configMapRef"
// +kubebuilder:validation:XValidation:rule="!has(self.repo) || (has(self.chart) && has(self.version))",message="a repo source needs chart and version"
// +kubebuilder:validation:XValidation:rule="!has(self.configMapRef) || !has(self.chart)",message="chart names a chart in a repo; a configMapRef's chart is the one its archive holds"
// +kubebuilder:validation:XValidation:rule="!has(self.repo) || !self.repo.startsWith('oci://') || !has(self.chart) || self.chart.matches('^[a-z0-9]+(([.]|_|__|-+)[a-z0-9]+)*$')",message="an oci:// repo's chart is an OCI repository name: lowercase letters, digits and '.', '_', '__' or dashes between them"
type HelmReleaseSpec struct {
	// Repo is where the chart is: an HTTP(S) chart repository, whose index.yaml is read to find the chart's
	// archive, as `helm pull --repo` does; or an OCI registry's repository, oci://HOST[:PORT]/PATH, the chart
	// being the OCI artifact PATH/CHART tagged VERSION ('+' written '_'), as `helm pull oci://HOST/PATH/CHART
	// --version VERSION` and Clusternet take it. The repo names no tag or digest (version does). Registries are
	// reached over HTTPS only. No credentials are sent (pulls are anonymous).
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^(https?://[^\s]+|oci://[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?(:[0-9]{1,5})?(/[a-z0-9]+(([.]|_|__|-+)[a-z0-9]+)*)*/?)$`
	Repo string `json:"repo,omitempty"`

	// Chart is the chart's name in Repo.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][-A-Za-z0-9_.]*$`
	Chart string `json:"chart,omitempty"`

	// Version is the chart's exact SemVer 2 version (ranges are not taken: a release changes only when its
	// spec does, and each change rolls out). Required with Repo; with ConfigMapRef, when set, the archive's
	// chart must have this version.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`
	Version string `json:"version,omitempty"`

	// ConfigMapRef names a ConfigMap in the release's namespace whose binaryData holds the packaged chart
	// (the .tgz `helm package` writes).
	// +optional
	ConfigMapRef *ChartConfigMapReference `json:"configMapRef,omitempty"`

	// Values are the chart's values, as in a values file; they override the chart's values.yaml. Override
	// policies change them per cluster (plaintext on /spec/values/...).
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	Values *apiextensionsv1.JSON `json:"values,omitempty"`

	// TargetNamespace is the namespace the chart is installed into in each member (.Release.Namespace, and the
	// namespace of its namespaced objects that name none). Default, and the only namespace taken: the
	// release's own. A namespaced template places objects only in its namespace (the executor refuses any
	// other, so that a namespace's users reach no other namespace through a chart); the field is kept so that
	// Clusternet's HelmCharts, whose targetNamespace is their namespace, are taken as they are. For the same
	// reason there is no createNamespace, and a chart whose templates make cluster-scoped objects does not
	// render (Rendered=False names them).
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	TargetNamespace string `json:"targetNamespace,omitempty"`
}

// ChartConfigMapReference names a ConfigMap holding a packaged chart.
type ChartConfigMapReference struct {
	// Name of the ConfigMap, in the release's namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Key in its binaryData holding the .tgz. Default: chart.tgz.
	// +optional
	// +kubebuilder:default="chart.tgz"
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key,omitempty"`
}

// HelmReleaseStatus is what the hub knows of the release in the fleet.
type HelmReleaseStatus struct {
	// ObservedGeneration is the release's generation once every cluster it is placed on applied it.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Rendered (False with Helm's error when the chart cannot be fetched or rendered) and
	// flotilla.io/Propagated (applied and healthy in every cluster).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Clusters says, for each cluster the release is placed on, which chart version it runs and its health.
	// +optional
	// +listType=map
	// +listMapKey=clusterName
	Clusters []ReleaseClusterStatus `json:"clusters,omitempty"`
}

// ReleaseClusterStatus is the release in one cluster.
type ReleaseClusterStatus struct {
	// ClusterName is the cluster.
	// +required
	ClusterName string `json:"clusterName"`

	// ChartVersion is the chart version the cluster's objects were rendered from; empty before any was.
	// +optional
	ChartVersion string `json:"chartVersion,omitempty"`

	// Applied is true once every object of the chart was applied in the cluster.
	// +optional
	Applied bool `json:"applied,omitempty"`

	// Health is the worst health of the chart's objects in the cluster: Healthy, Unhealthy or Unknown.
	// +optional
	Health string `json:"health,omitempty"`

	// Objects is how many objects the chart rendered for the cluster.
	// +optional
	Objects int32 `json:"objects,omitempty"`
}

// HelmReleaseList is a list of HelmReleases.
// +kubebuilder:object:root=true
type HelmReleaseList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HelmRelease `json:"items"`
}
