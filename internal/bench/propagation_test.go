package bench

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// TestDeploymentOfBinding: the benchmarks find their Deployments from the names of the bindings and Works
// the hub gives them.
func TestDeploymentOfBinding(t *testing.T) {
	deployment := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	for _, name := range []string{objectName(0), objectName(9999), templateName(0)} {
		if got := deploymentOfBinding(workv1alpha1.BindingName(deployment, name)); got != name {
			t.Errorf("deploymentOfBinding(BindingName(%s)) = %q", name, got)
		}
	}
}
