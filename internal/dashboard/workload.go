package dashboard

import (
	"net/http"
	"slices"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler"
)

// workloadPage is one template: its row, each cluster's status and diff, its evictions, why it is not
// elsewhere, and its events.
// rolloutView is a progressive rollout: its status, and what its conditions say.
type rolloutView struct {
	*workv1alpha1.RolloutStatus
	State string
}

type workloadPage struct {
	Row       workloadRow
	Clusters  []clusterStatus
	Evictions []workv1alpha1.GracefulEvictionTask
	// Rollout is a progressive rollout's waves (nil without one).
	Rollout   *rolloutView
	WhyNot    []scheduler.Explanation
	Scheduled string
	Events    []event
}

// clusterStatus is the template in one cluster: placement, apply and health, and what overrides changed.
type clusterStatus struct {
	Cluster, Health, Message, Overrides string
	Replicas                            int32
	Applied                             bool
	Diff                                string // unified diff of the template and the manifest sent there
	DiffNote                            string // why there is no diff
}

func (s *Server) workload(r *http.Request, c client.Client) (string, any, error) {
	var b workv1alpha1.Binding = &workv1alpha1.ClusterResourceBinding{}
	kind, key := "ClusterResourceBinding", client.ObjectKey{Name: r.PathValue("name")}
	if ns := r.PathValue("namespace"); ns != "-" {
		b, kind, key.Namespace = &workv1alpha1.ResourceBinding{}, "ResourceBinding", ns
	}
	if err := c.Get(r.Context(), key, b); err != nil {
		return "", nil, err
	}
	spec, status := b.BindingSpec(), b.BindingStatus()
	page := &workloadPage{Row: newRow(b), Evictions: spec.GracefulEvictionTasks}
	if status.Rollout != nil {
		page.Rollout = &rolloutView{RolloutStatus: status.Rollout}
	}
	for _, cond := range status.Conditions {
		switch {
		case cond.Type == workv1alpha1.ConditionScheduled:
			page.Scheduled = cond.Message
		case page.Rollout != nil && cond.Status == metav1.ConditionTrue && (cond.Type == workv1alpha1.ConditionRolloutProgressing ||
			cond.Type == workv1alpha1.ConditionRolloutComplete || cond.Type == workv1alpha1.ConditionRolloutFailed):
			page.Rollout.State = cond.Type + ": " + cond.Message
		}
	}
	template := templateOf(r, c, spec.Resource)
	if template != nil {
		page.Row.Policy = policyOf(template.GetLabels())
	}
	manifests := sentManifests(r, c, b, spec.Resource)
	for _, t := range spec.Clusters {
		cs := clusterStatus{Cluster: t.Name, Replicas: t.Replicas}
		if i := slices.IndexFunc(status.AggregatedStatus, func(a workv1alpha1.AggregatedStatusItem) bool { return a.ClusterName == t.Name }); i >= 0 {
			item := status.AggregatedStatus[i]
			cs.Applied, cs.Health, cs.Message = item.Applied, string(item.Health), item.AppliedMessage
		}
		sent, ok := manifests[t.Name]
		switch {
		case template == nil:
			cs.DiffNote = "the template cannot be read"
		case !ok:
			cs.DiffNote = "no manifest sent yet, or the Works cannot be read"
		default:
			cs.Overrides = sent.overrides
			cs.Diff = diff(template, sent.manifest)
			if cs.Diff == "" {
				cs.DiffNote = "sent as the template is"
			}
		}
		page.Clusters = append(page.Clusters, cs)
	}
	var names []string
	clusters := &clusterv1alpha1.ClusterList{}
	if err := c.List(r.Context(), clusters); err == nil {
		for _, cl := range clusters.Items {
			names = append(names, cl.Name)
		}
	} else {
		for _, v := range status.NotPlacedOn {
			names = append(names, v.Cluster)
		}
	}
	slices.Sort(names)
	for _, e := range scheduler.Explain(b, slices.Compact(names)) {
		if !e.Placed {
			page.WhyNot = append(page.WhyNot, e)
		}
	}
	page.Events = append(events(r, c, spec.Resource.Namespace, spec.Resource.Kind, spec.Resource.Name),
		events(r, c, b.GetNamespace(), kind, b.GetName())...)
	return spec.Resource.Kind + " " + spec.Resource.Name, page, nil
}

func templateOf(r *http.Request, c client.Client, ref workv1alpha1.ObjectReference) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(ref.APIVersion)
	u.SetKind(ref.Kind)
	if err := c.Get(r.Context(), client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, u); err != nil {
		return nil
	}
	return u
}

type sent struct {
	manifest  *unstructured.Unstructured
	overrides string
}

// sentManifests are the template's manifests in the binding's Works, by cluster; none the person may not read.
func sentManifests(r *http.Request, c client.Client, b workv1alpha1.Binding, ref workv1alpha1.ObjectReference) map[string]sent {
	out := map[string]sent{}
	works := &workv1alpha1.WorkList{}
	if err := c.List(r.Context(), works, client.MatchingLabels{workv1alpha1.LabelBindingName: b.GetName(),
		workv1alpha1.LabelBindingNamespace: b.GetNamespace()}); err != nil {
		return out
	}
	for _, w := range works.Items {
		cluster, ok := clusterv1alpha1.ClusterOfNamespace(w.Namespace)
		if !ok {
			continue
		}
		for _, m := range w.Spec.Workload.Manifests {
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(m.Raw); err != nil {
				continue
			}
			if u.GetKind() == ref.Kind && u.GetName() == ref.Name && u.GetNamespace() == ref.Namespace {
				out[cluster] = sent{manifest: u, overrides: w.Annotations[workv1alpha1.AnnotationOverrides]}
			}
		}
	}
	return out
}

// diff is a unified diff of the template and a manifest sent from it, without the fields the hub sets on
// every object (metadata the API server keeps, status, Flotilla's own labels and annotations).
func diff(template, manifest *unstructured.Unstructured) string {
	a, b := comparable(template), comparable(manifest)
	if a == b {
		return ""
	}
	d, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: difflib.SplitLines(a), B: difflib.SplitLines(b),
		FromFile: "template", ToFile: "sent", Context: 2})
	if err != nil {
		return err.Error()
	}
	return d
}

func comparable(u *unstructured.Unstructured) string {
	obj := u.DeepCopy().Object
	unstructured.RemoveNestedField(obj, "status")
	for _, f := range []string{"managedFields", "resourceVersion", "uid", "creationTimestamp", "generation", "ownerReferences", "finalizers"} {
		unstructured.RemoveNestedField(obj, "metadata", f)
	}
	for _, field := range []string{"labels", "annotations"} {
		m, _, _ := unstructured.NestedStringMap(obj, "metadata", field)
		for k := range m {
			if strings.Contains(k, "flotilla.io/") || k == "kubectl.kubernetes.io/last-applied-configuration" || k == "deployment.kubernetes.io/revision" {
				delete(m, k)
			}
		}
		if len(m) == 0 {
			unstructured.RemoveNestedField(obj, "metadata", field)
		} else {
			_ = unstructured.SetNestedStringMap(obj, m, "metadata", field)
		}
	}
	out, err := yaml.Marshal(obj)
	if err != nil {
		return err.Error()
	}
	return string(out)
}
