package scheduler

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// APIEnablement keeps a binding off clusters that do not serve its kind.
type APIEnablement struct{}

func (APIEnablement) Name() string { return "APIEnablement" }

func (APIEnablement) Filter(b *workv1alpha1.ResourceBindingSpec, c *clusterv1alpha1.Cluster) string {
	gv, err := schema.ParseGroupVersion(b.Resource.APIVersion)
	if err != nil {
		return "cannot parse the resource's apiVersion"
	}
	for _, e := range c.Status.APIEnablements {
		if e.GroupVersion == gv.String() && slices.ContainsFunc(e.Resources, func(r clusterv1alpha1.APIResource) bool { return r.Kind == b.Resource.Kind }) {
			return ""
		}
	}
	return "do not serve " + b.Resource.APIVersion + "/" + b.Resource.Kind
}

// ClusterAffinity keeps a binding on the clusters its placement's clusterAffinity selects.
type ClusterAffinity struct{}

func (ClusterAffinity) Name() string { return "ClusterAffinity" }

func (ClusterAffinity) Filter(b *workv1alpha1.ResourceBindingSpec, c *clusterv1alpha1.Cluster) string {
	if b.Placement == nil || b.Placement.ClusterAffinity == nil {
		return ""
	}
	if !AffinityMatches(b.Placement.ClusterAffinity, c) {
		return "do not match the cluster affinity"
	}
	return ""
}

// AffinityMatches reports whether a cluster qualifies under an affinity: in clusterNames (when set), matching
// the label and field selectors (when set), and not excluded.
func AffinityMatches(a *policyv1alpha1.ClusterAffinity, c *clusterv1alpha1.Cluster) bool {
	if slices.Contains(a.ExcludeClusters, c.Name) {
		return false
	}
	if len(a.ClusterNames) > 0 && !slices.Contains(a.ClusterNames, c.Name) {
		return false
	}
	if a.LabelSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(a.LabelSelector)
		if err != nil || !sel.Matches(labels.Set(c.Labels)) {
			return false
		}
	}
	if a.FieldSelector != nil {
		for _, e := range a.FieldSelector.MatchExpressions {
			var values []string
			switch e.Key {
			case "provider":
				values = []string{c.Spec.Provider}
			case "region":
				values = []string{c.Spec.Region}
			case "zone":
				values = c.Spec.Zones
			}
			in := slices.ContainsFunc(values, func(v string) bool { return slices.Contains(e.Values, v) })
			if (e.Operator == corev1.NodeSelectorOpIn) != in {
				return false
			}
		}
	}
	return true
}

// TaintToleration keeps a binding off clusters with NoSchedule or NoExecute taints it does not tolerate.
// It only keeps new placements away: a cluster the binding already runs on stays, so a cluster that turns
// unreachable or not ready (the hub taints it) never loses its workloads because of it.
type TaintToleration struct{}

func (TaintToleration) Name() string { return "TaintToleration" }

func (TaintToleration) Filter(b *workv1alpha1.ResourceBindingSpec, c *clusterv1alpha1.Cluster) string {
	if placedOn(b, c.Name) {
		return ""
	}
	var tolerations []corev1.Toleration
	if b.Placement != nil {
		tolerations = b.Placement.ClusterTolerations
	}
	for _, t := range c.Spec.Taints {
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		if !slices.ContainsFunc(tolerations, func(tol corev1.Toleration) bool { return tol.ToleratesTaint(klog.Background(), &t, false) }) {
			return "have the untolerated taint " + t.Key + ":" + string(t.Effect)
		}
	}
	return ""
}

// Locality prefers the clusters a binding already runs on, so rescheduling does not move it without need.
type Locality struct{}

func (Locality) Name() string { return "Locality" }

func (Locality) Score(b *workv1alpha1.ResourceBindingSpec, c *clusterv1alpha1.Cluster) int64 {
	if placedOn(b, c.Name) {
		return 100
	}
	return 0
}

// placedOn reports whether the binding currently runs on cluster.
func placedOn(b *workv1alpha1.ResourceBindingSpec, cluster string) bool {
	return slices.ContainsFunc(b.Clusters, func(t workv1alpha1.TargetCluster) bool { return t.Name == cluster })
}
