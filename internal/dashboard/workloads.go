package dashboard

import (
	"cmp"
	"net/http"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// States of a workload, worst first.
const (
	stateUnschedulable = "Unschedulable"
	stateUnhealthy     = "Unhealthy"
	stateProgressing   = "Progressing"
	stateHealthy       = "Healthy"
)

var stateOrder = []string{stateUnschedulable, stateUnhealthy, stateProgressing, stateHealthy}

// chip is one cluster of a workload's placement.
type chip struct {
	Cluster  string
	Replicas int32
	Applied  bool
	Health   string // Healthy, Unhealthy, Unknown or "" (not reported yet)
	Leaving  bool
}

// workloadRow is one template with a binding.
type workloadRow struct {
	APIVersion, Kind       string
	Namespace, Name        string
	Binding, BindingPath   string // the binding's namespace/name as the workload page's path
	Policy, State, Message string
	Replicas               int32
	Chips                  []chip
}

type workloadsPage struct {
	Rows                            []workloadRow
	Namespace, Kind, Cluster, State string
	Namespaces, Kinds, Clusters     []string
	States                          []string
	Shown, Total, Hidden            int
	AllURL                          string // this page with every row
}

// pageRows is how many rows the workloads page shows unless asked for all: the worst come first, and a
// thousand rows take a browser longer to lay out than the server to render.
const pageRows = 200

// listWorkloads reads every binding the person may list (the cluster-scoped ones only when they may), worst
// state first.
func (s *Server) listWorkloads(r *http.Request, c client.Client) ([]workloadRow, error) {
	var rows []workloadRow
	crbs := &workv1alpha1.ClusterResourceBindingList{}
	if err := c.List(r.Context(), crbs); err == nil {
		for i := range crbs.Items {
			rows = append(rows, newRow(&crbs.Items[i]))
		}
	}
	rbs := &workv1alpha1.ResourceBindingList{}
	if err := s.listNamespaced(r, c, rbs); err != nil {
		return nil, err
	}
	for i := range rbs.Items {
		rows = append(rows, newRow(&rbs.Items[i]))
	}
	s.claimingPolicies(r, c, rows)
	slices.SortFunc(rows, func(a, b workloadRow) int {
		return cmp.Or(cmp.Compare(slices.Index(stateOrder, a.State), slices.Index(stateOrder, b.State)),
			cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name))
	})
	return rows, nil
}

// claimingPolicies names the policy of each row, from its template's claim labels: one metadata-only list
// per kind, in the namespace the bindings were listed in; rows whose templates cannot be read keep none.
func (s *Server) claimingPolicies(r *http.Request, c client.Client, rows []workloadRow) {
	kinds := map[schema.GroupVersionKind]map[string]string{}
	for _, row := range rows {
		kinds[schema.FromAPIVersionAndKind(row.APIVersion, row.Kind)] = nil
	}
	for gvk := range kinds {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		policies := map[string]string{}
		if err := s.listNamespaced(r, c, list); err == nil {
			for _, m := range list.Items {
				policies[m.Namespace+"/"+m.Name] = policyOf(m.Labels)
			}
		}
		kinds[gvk] = policies
	}
	for i := range rows {
		rows[i].Policy = kinds[schema.FromAPIVersionAndKind(rows[i].APIVersion, rows[i].Kind)][rows[i].Namespace+"/"+rows[i].Name]
	}
}

// policyOf names the policy a template's claim labels name.
func policyOf(l map[string]string) string {
	switch {
	case l[policyv1alpha1.LabelPropagationPolicyName] != "":
		return l[policyv1alpha1.LabelPropagationPolicyNamespace] + "/" + l[policyv1alpha1.LabelPropagationPolicyName]
	case l[policyv1alpha1.LabelClusterPropagationPolicy] != "":
		return l[policyv1alpha1.LabelClusterPropagationPolicy] + " (cluster-wide)"
	}
	return ""
}

func newRow(b workv1alpha1.Binding) workloadRow {
	spec, status := b.BindingSpec(), b.BindingStatus()
	row := workloadRow{APIVersion: spec.Resource.APIVersion, Kind: spec.Resource.Kind, Namespace: spec.Resource.Namespace, Name: spec.Resource.Name,
		Binding: b.GetName(), BindingPath: or(b.GetNamespace(), "-") + "/" + b.GetName(), Replicas: spec.Replicas}
	for _, t := range spec.Clusters {
		row.Chips = append(row.Chips, chip{Cluster: t.Name, Replicas: t.Replicas})
	}
	for _, e := range spec.GracefulEvictionTasks {
		ch := chip{Cluster: e.FromCluster, Leaving: true}
		if e.Replicas != nil {
			ch.Replicas = *e.Replicas
		}
		row.Chips = append(row.Chips, ch)
	}
	unhealthy := false
	for _, item := range status.AggregatedStatus {
		for i := range row.Chips {
			if row.Chips[i].Cluster == item.ClusterName {
				row.Chips[i].Applied, row.Chips[i].Health = item.Applied, string(item.Health)
			}
		}
		if item.Health == workv1alpha1.ResourceUnhealthy || (!item.Applied && item.AppliedMessage != "") {
			unhealthy = true
		}
	}
	scheduled := meta.FindStatusCondition(status.Conditions, workv1alpha1.ConditionScheduled)
	healthy := meta.FindStatusCondition(status.Conditions, workv1alpha1.ConditionHealthy)
	switch {
	case scheduled != nil && scheduled.Status == metav1.ConditionFalse:
		row.State, row.Message = stateUnschedulable, scheduled.Message
	case unhealthy:
		row.State = stateUnhealthy
		if healthy != nil {
			row.Message = healthy.Message
		}
	case healthy != nil && healthy.Status == metav1.ConditionTrue:
		row.State = stateHealthy
	default:
		row.State = stateProgressing
	}
	return row
}

func (s *Server) workloads(r *http.Request, c client.Client) (string, any, error) {
	rows, err := s.listWorkloads(r, c)
	if err != nil {
		return "", nil, err
	}
	q := r.URL.Query()
	page := &workloadsPage{Namespace: q.Get("namespace"), Kind: q.Get("kind"), Cluster: q.Get("cluster"), State: q.Get("state"),
		States: stateOrder, Total: len(rows)}
	for _, row := range rows {
		page.Namespaces = appendNew(page.Namespaces, row.Namespace)
		page.Kinds = appendNew(page.Kinds, row.Kind)
		for _, ch := range row.Chips {
			page.Clusters = appendNew(page.Clusters, ch.Cluster)
		}
		if (page.Kind != "" && row.Kind != page.Kind) || (page.State != "" && row.State != page.State) ||
			(page.Cluster != "" && !slices.ContainsFunc(row.Chips, func(ch chip) bool { return ch.Cluster == page.Cluster })) {
			continue
		}
		page.Rows = append(page.Rows, row)
	}
	for _, list := range [][]string{page.Namespaces, page.Kinds, page.Clusters} {
		slices.Sort(list)
	}
	if q.Get("all") == "" && len(page.Rows) > pageRows {
		page.Hidden, page.Rows = len(page.Rows)-pageRows, page.Rows[:pageRows]
		all := r.URL.Query()
		all.Set("all", "1")
		page.AllURL = Prefix + "workloads?" + all.Encode()
	}
	page.Shown = len(page.Rows)
	return "Workloads", page, nil
}

func appendNew(list []string, s string) []string {
	if s == "" || slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// event is a Kubernetes event as the pages list it.
type event struct {
	Type, Reason, Message, Object, Age string
}

// events lists the events about an object (kind and name; any namespace when namespace is empty), newest
// first; none when the person may not list events.
func events(r *http.Request, c client.Client, namespace, kind, name string) []event {
	list := &corev1.EventList{}
	if err := c.List(r.Context(), list, client.InNamespace(namespace),
		client.MatchingFields{"involvedObject.kind": kind, "involvedObject.name": name}); err != nil {
		return nil
	}
	slices.SortFunc(list.Items, func(a, b corev1.Event) int { return b.LastTimestamp.Compare(a.LastTimestamp.Time) })
	var out []event
	for _, e := range list.Items[:min(len(list.Items), 20)] {
		at := e.LastTimestamp.Time
		if at.IsZero() {
			at = e.EventTime.Time
		}
		out = append(out, event{Type: e.Type, Reason: e.Reason, Message: e.Message,
			Object: strings.ToLower(e.InvolvedObject.Kind) + "/" + e.InvolvedObject.Name, Age: duration.HumanDuration(metav1.Now().Sub(at))})
	}
	return out
}
