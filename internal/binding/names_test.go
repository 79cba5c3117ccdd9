package binding

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/detector"
)

// TestWorkNamesFitTheirLimits: the Work of the template with the longest name an object may have, in the
// namespace with the longest name, has a valid name, and labels the API server accepts.
func TestWorkNamesFitTheirLimits(t *testing.T) {
	namespace := strings.Repeat("n", validation.DNS1123LabelMaxLength)
	template := strings.Repeat("t", validation.DNS1123SubdomainMaxLength)
	for _, gk := range []schema.GroupKind{{Group: "apps", Kind: "Deployment"}, {Group: "example.com", Kind: "Widget"}} {
		for _, b := range []*workv1alpha1.ResourceBinding{
			{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: detector.BindingName(gk, template)}},
			{ObjectMeta: metav1.ObjectMeta{Name: detector.BindingName(gk, template)}},
		} {
			if errs := validation.IsDNS1123Subdomain(WorkName(b)); len(errs) > 0 {
				t.Errorf("Work name %q: %v", WorkName(b), errs)
			}
			for k, v := range workLabels(b) {
				if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
					t.Errorf("label %s=%q: %v", k, v, errs)
				}
			}
		}
	}
}
