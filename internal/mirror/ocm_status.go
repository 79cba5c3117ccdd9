package mirror

import (
	"k8s.io/apimachinery/pkg/api/meta"

	addonv1alpha1 "github.com/flotilla-io/flotilla/api/addon/v1alpha1"
	ocmaddonv1alpha1 "github.com/flotilla-io/flotilla/api/ocm/addon/v1alpha1"
)

// managedClusterAddOnStatus is a ClusterAddOn's status in OCM's words: the same conditions and namespace;
// each registration as a client certificate of the kube-apiserver-client signer; each config as the
// addondeploymentconfig it is the twin of, desired and applied with its spec hash; health mode Work as
// Customized (the health of what the add-on installed), Lease as Lease.
func managedClusterAddOnStatus(in *addonv1alpha1.ClusterAddOnStatus) *ocmaddonv1alpha1.ManagedClusterAddOnStatus {
	out := &ocmaddonv1alpha1.ManagedClusterAddOnStatus{Conditions: in.Conditions, Namespace: in.Namespace}
	for _, r := range in.Registrations {
		out.Registrations = append(out.Registrations, ocmaddonv1alpha1.RegistrationConfig{
			SignerName: ocmaddonv1alpha1.KubeAPIServerClientSigner,
			Subject:    ocmaddonv1alpha1.Subject{User: r.User, Groups: r.Groups}})
	}
	for _, c := range in.ConfigReferences {
		gr := ocmaddonv1alpha1.ConfigGroupResource{Group: c.Group, Resource: c.Resource}
		if c.Group == addonv1alpha1.GroupVersion.Group && c.Resource == addOnConfigsResource {
			gr = ocmaddonv1alpha1.ConfigGroupResource{Group: ocmaddonv1alpha1.GroupVersion.Group, Resource: ocmaddonv1alpha1.ResourceAddOnDeploymentConfigs}
		}
		referent := ocmaddonv1alpha1.ConfigReferent{Name: c.Name, Namespace: c.Namespace}
		hash := ocmaddonv1alpha1.ConfigSpecHash{ConfigReferent: referent, SpecHash: c.SpecHash}
		out.ConfigReferences = append(out.ConfigReferences, ocmaddonv1alpha1.ConfigReference{
			ConfigGroupResource: gr, ConfigReferent: referent, DesiredConfig: &hash, LastAppliedConfig: hash.DeepCopy()})
	}
	switch in.HealthCheck.Mode {
	case addonv1alpha1.HealthLease:
		out.HealthCheck.Mode = "Lease"
	case addonv1alpha1.HealthWork:
		out.HealthCheck.Mode = "Customized"
	}
	return out
}

// clusterManagementAddOnStatus is an AddOn's status in OCM's words: per placement being rolled out, the
// AddOn's Progressing condition.
func clusterManagementAddOnStatus(in *addonv1alpha1.AddOnStatus) *ocmaddonv1alpha1.ClusterManagementAddOnStatus {
	out := &ocmaddonv1alpha1.ClusterManagementAddOnStatus{}
	progressing := meta.FindStatusCondition(in.Conditions, addonv1alpha1.ConditionProgressing)
	for _, r := range in.Rollouts {
		p := ocmaddonv1alpha1.InstallProgression{PlacementRef: ocmaddonv1alpha1.PlacementRef{Name: r.Name, Namespace: r.Namespace}}
		if progressing != nil {
			p.Conditions = append(p.Conditions, *progressing)
		}
		out.InstallProgressions = append(out.InstallProgressions, p)
	}
	return out
}
