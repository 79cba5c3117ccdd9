package dashboard

import (
	"net/http"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-io/flotilla/api/addon/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// addOns are the add-ons enabled on one cluster as its page shows them, or why they cannot be shown.
type addOns struct {
	Rows  []addOnRow
	Error string // the hub's answer when the person may not list them
}

// addOnRow is one add-on on a cluster: whether it is Available and Degraded, and what is wrong.
type addOnRow struct {
	Name, Available, Degraded, Revision, Message string
	ByPlacement                                  bool
}

// clusterAddOns reads the ClusterAddOns in a cluster's namespace, as the person reading the page.
func clusterAddOns(r *http.Request, c client.Client, cluster string) addOns {
	list := &addonv1alpha1.ClusterAddOnList{}
	if err := c.List(r.Context(), list, client.InNamespace(clusterv1alpha1.ClusterNamespace(cluster))); err != nil {
		return addOns{Error: err.Error()}
	}
	var out addOns
	for i := range list.Items {
		ca := &list.Items[i]
		row := addOnRow{Name: ca.Name, Available: conditionOf(ca.Status.Conditions, addonv1alpha1.ConditionAvailable),
			Degraded: conditionOf(ca.Status.Conditions, addonv1alpha1.ConditionDegraded), Revision: or(ca.Status.Revision, "-")}
		_, row.ByPlacement = ca.Labels[addonv1alpha1.LabelInstalledBy]
		// The message says why it is not well: Degraded's first, then Available's.
		if d := meta.FindStatusCondition(ca.Status.Conditions, addonv1alpha1.ConditionDegraded); d != nil && d.Status == metav1.ConditionTrue {
			row.Message = d.Message
		} else if a := meta.FindStatusCondition(ca.Status.Conditions, addonv1alpha1.ConditionAvailable); a != nil && a.Status != metav1.ConditionTrue {
			row.Message = a.Message
		}
		out.Rows = append(out.Rows, row)
	}
	slices.SortFunc(out.Rows, func(a, b addOnRow) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// conditionOf is a condition's status, Unknown until it is set.
func conditionOf(conditions []metav1.Condition, t string) string {
	if c := meta.FindStatusCondition(conditions, t); c != nil {
		return string(c.Status)
	}
	return string(metav1.ConditionUnknown)
}
