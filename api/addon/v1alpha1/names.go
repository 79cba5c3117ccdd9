package v1alpha1

import "strings"

// Names shared by the hub, the agent and the command line.

// DefaultInstallNamespace is the member namespace of an add-on whose AddOn and ClusterAddOn name none.
func DefaultInstallNamespace(addon string) string { return "flotilla-addon-" + addon }

// InstallNamespaceOf is the member namespace the add-on is installed in on a cluster.
func InstallNamespaceOf(a *AddOn, c *ClusterAddOn) string {
	switch {
	case c != nil && c.Spec.InstallNamespace != "":
		return c.Spec.InstallNamespace
	case a.Spec.InstallNamespace != "":
		return a.Spec.InstallNamespace
	}
	return DefaultInstallNamespace(a.Name)
}

// WorkName is the name of the Work that installs an add-on, in the cluster's namespace.
func WorkName(addon string) string { return "addon-" + addon }

// addonUserPrefix starts the user name of an add-on agent: system:flotilla:addon:ADDON:CLUSTER.
const addonUserPrefix = "system:flotilla:addon:"

// AgentUser is the hub user of an add-on's agent on a cluster (its certificate's common name).
func AgentUser(addon, cluster string) string { return addonUserPrefix + addon + ":" + cluster }

// AgentGroup is the group of every agent of one add-on (its certificates' organization).
func AgentGroup(addon string) string { return addonUserPrefix + addon }

// ParseAgentUser returns the add-on and cluster of an add-on agent's user name.
func ParseAgentUser(user string) (addon, cluster string, ok bool) {
	rest, found := strings.CutPrefix(user, addonUserPrefix)
	if !found {
		return "", "", false
	}
	addon, cluster, ok = strings.Cut(rest, ":")
	if !ok || addon == "" || cluster == "" || strings.Contains(cluster, ":") {
		return "", "", false
	}
	return addon, cluster, true
}

// CredentialSecretName is the Secret, in the add-on's install namespace of the member, that holds its
// agent's hub kubeconfig (key "kubeconfig").
func CredentialSecretName(addon string) string { return addon + "-hub-kubeconfig" }

// CredentialSecretKey is the key of the kubeconfig in the credential Secret.
const CredentialSecretKey = "kubeconfig"

// LeaseName is the name of the Lease an add-on agent renews in its cluster's namespace on the hub, with
// health check mode Lease.
func LeaseName(addon string) string { return addon }
