package detector

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// missingOverrides names the override policies of p's dependentOverrides that do not exist (or are being
// deleted): OverridePolicies of a PropagationPolicy's namespace, ClusterOverridePolicies for a
// ClusterPropagationPolicy. An error reading one is returned, never taken for "missing".
func (d *Detector) missingOverrides(ctx context.Context, p Policy) ([]string, error) {
	var missing []string
	for _, name := range p.Spec.DependentOverrides {
		var o client.Object = &policyv1alpha1.ClusterOverridePolicy{}
		if !p.Cluster() {
			o = &policyv1alpha1.OverridePolicy{}
		}
		err := d.client.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: name}, o)
		switch {
		case apierrors.IsNotFound(err):
			missing = append(missing, kindOf(p)+name)
		case err != nil:
			return nil, err
		case o.GetDeletionTimestamp() != nil:
			missing = append(missing, kindOf(p)+name+" (being deleted)")
		}
	}
	return missing, nil
}

// kindOf is the kind of override policy p's dependentOverrides name.
func kindOf(p Policy) string {
	if p.Cluster() {
		return "ClusterOverridePolicy "
	}
	return "OverridePolicy " + p.Namespace + "/"
}
