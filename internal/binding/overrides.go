package binding

import (
	"context"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/override"
)

// overridePolicies lists the ClusterOverridePolicies and the OverridePolicies of namespace, in the order
// they apply.
func (r *Controller[T]) overridePolicies(ctx context.Context, namespace string) ([]override.Policy, error) {
	cops := &policyv1alpha1.ClusterOverridePolicyList{}
	if err := r.Client.List(ctx, cops); err != nil {
		return nil, err
	}
	var out []override.Policy
	for i := range cops.Items {
		out = append(out, override.Policy{Name: cops.Items[i].Name, Spec: &cops.Items[i].Spec})
	}
	if namespace != "" {
		ops := &policyv1alpha1.OverridePolicyList{}
		if err := r.Client.List(ctx, ops, client.InNamespace(namespace)); err != nil {
			return nil, err
		}
		for i := range ops.Items {
			out = append(out, override.Policy{Namespace: namespace, Name: ops.Items[i].Name, Spec: &ops.Items[i].Spec})
		}
	}
	override.Sort(out)
	return out, nil
}

// override applies the policies to every manifest for cluster and returns the policies that changed
// something, in order and each once.
func (r *Controller[T]) override(ctx context.Context, manifests []*unstructured.Unstructured, cluster string, policies []override.Policy) ([]string, error) {
	if len(policies) == 0 {
		return nil, nil
	}
	c := &clusterv1alpha1.Cluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: cluster}, c); err != nil {
		return nil, err
	}
	var all []string
	for _, m := range manifests {
		applied, err := override.Apply(m, c, policies)
		if err != nil {
			return nil, err
		}
		for _, id := range applied {
			if !strings.Contains(","+strings.Join(all, ",")+",", ","+id+",") {
				all = append(all, id)
			}
		}
	}
	return all, nil
}

// overriddenCondition says whether every override applied.
func overriddenCondition(generation int64, errs []string) metav1.Condition {
	c := metav1.Condition{Type: workv1alpha1.ConditionOverridden, Status: metav1.ConditionTrue, Reason: "Overridden",
		Message: "every override policy applies", ObservedGeneration: generation}
	if len(errs) > 0 {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, "OverrideFailed", strings.Join(errs, "; ")
	}
	return c
}
