package addon

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-io/flotilla/api/addon/v1alpha1"
)

// ConfigResource is the one configuration kind add-ons take today: AddOnConfig.
const ConfigResource = "addonconfigs"

// chosenConfig is the configuration object a cluster runs an add-on with, and who named it.
type chosenConfig struct {
	ref addonv1alpha1.ConfigReference
	by  string
}

// chooseConfigs picks, for each supported config kind, the object a cluster runs with: the ClusterAddOn's,
// else its placement's, else the AddOn's default. A kind with none of the three is left out.
func chooseConfigs(a *addonv1alpha1.AddOn, c *addonv1alpha1.ClusterAddOn, p *addonv1alpha1.PlacementStrategy) []chosenConfig {
	var out []chosenConfig
	find := func(refs []addonv1alpha1.ConfigReference, kind addonv1alpha1.ConfigMeta) *addonv1alpha1.ConfigReference {
		for i := range refs {
			if refs[i].Group == kind.Group && refs[i].Resource == kind.Resource {
				return &refs[i]
			}
		}
		return nil
	}
	for _, kind := range a.Spec.SupportedConfigs {
		switch {
		case c != nil && find(c.Spec.Configs, kind) != nil:
			out = append(out, chosenConfig{ref: *find(c.Spec.Configs, kind), by: "the ClusterAddOn"})
		case p != nil && find(p.Configs, kind) != nil:
			out = append(out, chosenConfig{ref: *find(p.Configs, kind), by: "placement " + p.Namespace + "/" + p.Name})
		case kind.DefaultConfig != nil:
			out = append(out, chosenConfig{ref: addonv1alpha1.ConfigReference{Group: kind.Group, Resource: kind.Resource, ConfigName: *kind.DefaultConfig},
				by: "the AddOn's default"})
		}
	}
	return out
}

// errMissing is a configuration the cluster's add-on cannot run without: it makes the ClusterAddOn Degraded.
type errMissing struct{ msg string }

func (e errMissing) Error() string { return e.msg }

// readConfigs reads the chosen configuration objects and returns the one AddOnConfig spec the template is
// rendered with and the status.configReferences. A config that does not exist is an errMissing; any other
// read error is returned as it is (and is never taken for "absent").
func readConfigs(ctx context.Context, r client.Reader, chosen []chosenConfig) (*addonv1alpha1.AddOnConfigSpec, []addonv1alpha1.ConfigStatus, error) {
	var spec *addonv1alpha1.AddOnConfigSpec
	var refs []addonv1alpha1.ConfigStatus
	for _, c := range chosen {
		if c.ref.Group != addonv1alpha1.GroupVersion.Group || c.ref.Resource != ConfigResource {
			return nil, nil, errMissing{fmt.Sprintf("config %s.%s %s/%s named by %s: only %s.%s is supported",
				c.ref.Resource, c.ref.Group, c.ref.Namespace, c.ref.Name, c.by, ConfigResource, addonv1alpha1.GroupVersion.Group)}
		}
		obj := &addonv1alpha1.AddOnConfig{}
		if err := r.Get(ctx, client.ObjectKey{Namespace: c.ref.Namespace, Name: c.ref.Name}, obj); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, nil, errMissing{fmt.Sprintf("AddOnConfig %s/%s, named by %s, does not exist", c.ref.Namespace, c.ref.Name, c.by)}
			}
			return nil, nil, err
		}
		spec = &obj.Spec
		refs = append(refs, addonv1alpha1.ConfigStatus{ConfigReference: c.ref, SpecHash: SpecHash(obj.Spec)})
	}
	return spec, refs, nil
}
