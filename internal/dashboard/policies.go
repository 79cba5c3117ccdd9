package dashboard

import (
	"fmt"
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// policyRow is one propagation policy: what it selects, what it claims, and whether it is honoured.
type policyRow struct {
	Namespace, Name, Placement string
	Selects                    []string
	Claimed                    int32
	Templates                  []string
	Honoured, Problem          string
}

func (s *Server) policies(r *http.Request, c client.Client) (string, any, error) {
	var rows []policyRow
	cpps := &policyv1alpha1.ClusterPropagationPolicyList{}
	if err := c.List(r.Context(), cpps); err == nil {
		for _, p := range cpps.Items {
			rows = append(rows, newPolicyRow("", p.Name, &p.Spec, &p.Status))
		}
	}
	pps := &policyv1alpha1.PropagationPolicyList{}
	if err := s.listNamespaced(r, c, pps); err != nil {
		return "", nil, err
	}
	for _, p := range pps.Items {
		rows = append(rows, newPolicyRow(p.Namespace, p.Name, &p.Spec, &p.Status))
	}
	return "Policies", rows, nil
}

func newPolicyRow(namespace, name string, spec *policyv1alpha1.PropagationSpec, status *policyv1alpha1.PropagationPolicyStatus) policyRow {
	row := policyRow{Namespace: namespace, Name: name, Claimed: status.ClaimedTemplates, Templates: status.Templates, Honoured: "Unknown"}
	for _, s := range spec.ResourceSelectors {
		sel := s.Kind
		if s.Namespace != "" {
			sel += " in " + s.Namespace
		}
		if s.Name != "" {
			sel += " named " + s.Name
		}
		if s.LabelSelector != nil {
			sel += " labelled " + metaSelector(s.LabelSelector.MatchLabels)
		}
		row.Selects = append(row.Selects, sel)
	}
	var where []string
	if a := spec.Placement.ClusterAffinity; a != nil && len(a.ClusterNames) > 0 {
		where = append(where, "clusters "+strings.Join(a.ClusterNames, ", "))
	}
	if len(spec.Placement.ClusterAffinities) > 0 {
		where = append(where, fmt.Sprintf("%d affinity groups", len(spec.Placement.ClusterAffinities)))
	}
	if rs := spec.Placement.ReplicaScheduling; rs != nil {
		where = append(where, string(rs.ReplicaSchedulingType))
	}
	row.Placement = or(strings.Join(where, "; "), "every cluster")
	if cond := meta.FindStatusCondition(status.Conditions, policyv1alpha1.ConditionHonoured); cond != nil {
		row.Honoured = string(cond.Status)
		if cond.Status != "True" {
			row.Problem = cond.Message
		}
	}
	return row
}

func metaSelector(m map[string]string) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, ",")
}
