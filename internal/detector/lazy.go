package detector

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/selection"
)

// lazyMark returns what the binding of template t records under a Lazy policy p: a hash of the template's
// content, the part ContentChanged compares less the claim labels the detector writes itself. Empty when p
// is not Lazy. Karmada's activationPreference: Lazy makes policy changes reach a template on its next change;
// the mark is how a later pass tells "the policy changed" from "the template changed" without the event that
// brought it (the queue merges the two).
func lazyMark(t *unstructured.Unstructured, p *Policy) (string, error) {
	if p.Spec.ActivationPreference != policyv1alpha1.LazyActivation {
		return "", nil
	}
	c := content(t)
	if m, ok := c["metadata"].(map[string]any); ok {
		if labels, ok := m["labels"].(map[string]any); ok {
			labels = maps.Clone(labels)
			delete(labels, policyv1alpha1.LabelPropagationPolicyNamespace)
			delete(labels, policyv1alpha1.LabelPropagationPolicyName)
			delete(labels, policyv1alpha1.LabelClusterPropagationPolicy)
			m["labels"] = labels
		}
	}
	data, err := json.Marshal(c) // maps marshal with sorted keys: the same content gives the same hash
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:16]), nil
}

// claimedBy reports whether template t's claim labels name policy p.
func claimedBy(t *unstructured.Unstructured, p *Policy) bool {
	c := selection.ClaimOf(t)
	return c != nil && c.Namespace == p.Namespace && c.Name == p.Name
}
