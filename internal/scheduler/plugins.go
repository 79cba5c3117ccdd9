package scheduler

import (
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-io/flotilla/api/apps/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/clusterset"
	"github.com/flotilla-io/flotilla/internal/selection"
)

// APIEnablement keeps a binding off clusters that do not serve its kind. It takes a binding away from a
// cluster it runs on only when that cluster's API list is complete (APIsComplete=True) and lacks the kind:
// a list cut short by a failed discovery, or missing because the cluster has not reported since the hub
// started from a backup without Cluster status, says nothing about what the member serves.
type APIEnablement struct{}

func (APIEnablement) Name() string { return "APIEnablement" }

func (APIEnablement) Filter(b *workv1alpha1.ResourceBindingSpec, c *clusterv1alpha1.Cluster) string {
	gv, err := schema.ParseGroupVersion(b.Resource.APIVersion)
	if err != nil {
		return "cannot parse the resource's apiVersion"
	}
	if gv.Group == appsv1alpha1.GroupName {
		return "" // expanded on the hub: the member gets the objects it stands for, never the kind
	}
	for _, e := range c.Status.APIEnablements {
		if e.GroupVersion == gv.String() && slices.ContainsFunc(e.Resources, func(r clusterv1alpha1.APIResource) bool { return r.Kind == b.Resource.Kind }) {
			return ""
		}
	}
	if !meta.IsStatusConditionTrue(c.Status.Conditions, clusterv1alpha1.ClusterConditionAPIsComplete) {
		if placedOn(b, c.Name) {
			return ""
		}
		return "have not reported " + b.Resource.APIVersion + "/" + b.Resource.Kind + " in an incomplete API list"
	}
	return "do not serve " + b.Resource.APIVersion + "/" + b.Resource.Kind
}

// ClusterSetGrant keeps a namespaced binding on the clusters its namespace's ClusterSetBindings grant
// (clusterset.Grant). The controller reads the grant for each pass and hands it in (Framework.Confined), so
// the plugins read no API. A cluster the binding runs on is refused too: the binding leaves it the way it
// leaves any cluster its placement drops, its copy kept until the replacement is healthy.
type ClusterSetGrant struct {
	Grant clusterset.Grant
}

func (ClusterSetGrant) Name() string { return PluginClusterSetGrant }

func (p ClusterSetGrant) Filter(_ *workv1alpha1.ResourceBindingSpec, c *clusterv1alpha1.Cluster) string {
	if p.Grant.Allows(c.Labels) {
		return ""
	}
	return p.Grant.Refusal(c.Name)
}

// ClusterAffinity keeps a binding on the clusters its placement's clusterAffinity selects.
type ClusterAffinity struct{}

func (ClusterAffinity) Name() string { return "ClusterAffinity" }

func (ClusterAffinity) Filter(b *workv1alpha1.ResourceBindingSpec, c *clusterv1alpha1.Cluster) string {
	if b.Placement == nil || b.Placement.ClusterAffinity == nil {
		return ""
	}
	if !selection.Cluster(b.Placement.ClusterAffinity, c) {
		return "do not match the cluster affinity"
	}
	return ""
}

// TaintToleration keeps a binding off clusters with NoSchedule or NoExecute taints it does not tolerate.
// NoSchedule only keeps new placements away: a cluster the binding already runs on stays, so a cluster that
// turns unreachable or not ready (the hub taints it NoSchedule) never loses its workloads because of it. An
// untolerated NoExecute taint, or one tolerated for tolerationSeconds that have passed, also moves the
// binding away from a cluster it runs on; the old copy is removed only once the replacement is healthy.
//
// Every binding tolerates the hub's two health taints with effect NoExecute for FailoverAfter, as every pod
// tolerates a node's for 300 s, unless its policy tolerates that taint itself: then the policy's toleration
// decides (without tolerationSeconds, the binding never fails over).
//
// A binding that follows a Placement (FollowsPlacement) is left to it: the Placement applied its own
// tolerations when it decided, and drops a cluster whose taint it does not tolerate (placementref.go).
type TaintToleration struct {
	FailoverAfter    time.Duration
	FollowsPlacement bool
}

func (TaintToleration) Name() string { return "TaintToleration" }

func (p TaintToleration) Filter(b *workv1alpha1.ResourceBindingSpec, c *clusterv1alpha1.Cluster) string {
	if len(c.Spec.Taints) == 0 || p.FollowsPlacement {
		return ""
	}
	tolerations := p.tolerations(b)
	placed := placedOn(b, c.Name)
	for _, t := range c.Spec.Taints {
		if t.Effect == corev1.TaintEffectPreferNoSchedule || (placed && t.Effect == corev1.TaintEffectNoSchedule) {
			continue
		}
		i := slices.IndexFunc(tolerations, func(tol corev1.Toleration) bool { return tol.ToleratesTaint(klog.Background(), &t, false) })
		if i < 0 {
			return "have the untolerated taint " + t.Key + ":" + string(t.Effect)
		}
		if placed && t.Effect == corev1.TaintEffectNoExecute && noExecuteExpired(tolerations[i], t, time.Now()) {
			return "have the taint " + t.Key + ":NoExecute tolerated only for " + strconv.FormatInt(*tolerations[i].TolerationSeconds, 10) + "s"
		}
	}
	return ""
}

// tolerations are the binding's cluster tolerations, with the default failover toleration for each health
// taint the policy does not tolerate itself.
func (p TaintToleration) tolerations(b *workv1alpha1.ResourceBindingSpec) []corev1.Toleration {
	var own []corev1.Toleration
	if b.Placement != nil {
		own = b.Placement.ClusterTolerations
	}
	out := slices.Clone(own)
	for _, key := range []string{clusterv1alpha1.TaintClusterUnreachable, clusterv1alpha1.TaintClusterNotReady} {
		health := corev1.Taint{Key: key, Effect: corev1.TaintEffectNoExecute}
		if !slices.ContainsFunc(own, func(tol corev1.Toleration) bool { return tol.ToleratesTaint(klog.Background(), &health, false) }) {
			out = append(out, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute,
				TolerationSeconds: ptr.To(int64(p.FailoverAfter.Seconds()))})
		}
	}
	return out
}

// noExecuteExpired reports whether a NoExecute toleration with tolerationSeconds has run out.
func noExecuteExpired(tol corev1.Toleration, t corev1.Taint, now time.Time) bool {
	return tol.TolerationSeconds != nil && t.TimeAdded != nil &&
		!now.Before(t.TimeAdded.Add(time.Duration(*tol.TolerationSeconds)*time.Second))
}

// Tainted says, for each cluster of the binding's placement that carries a NoExecute taint, when the binding
// leaves it, as Filter decides: when the first of its tolerations of the cluster's NoExecute taints runs out;
// at once for a taint it does not tolerate (the taint's timeAdded, or now when that is not known); never
// when it tolerates them all without a time limit (or a taint has no timeAdded to count from). The times are
// whole seconds, as the API server keeps them; the clusters are sorted by name.
func (p TaintToleration) Tainted(b *workv1alpha1.ResourceBindingSpec, clusters []clusterv1alpha1.Cluster, now time.Time) []workv1alpha1.TaintedCluster {
	if p.FollowsPlacement {
		return nil
	}
	tolerations := p.tolerations(b)
	own := 0 // tolerations[own:] are the default failover tolerations
	if b.Placement != nil {
		own = len(b.Placement.ClusterTolerations)
	}
	var out []workv1alpha1.TaintedCluster
	for _, c := range clusters {
		if !placedOn(b, c.Name) || !slices.ContainsFunc(c.Spec.Taints, func(t corev1.Taint) bool { return t.Effect == corev1.TaintEffectNoExecute }) {
			continue
		}
		entry := workv1alpha1.TaintedCluster{Cluster: c.Name}
		for _, t := range c.Spec.Taints {
			if t.Effect != corev1.TaintEffectNoExecute {
				continue
			}
			i := slices.IndexFunc(tolerations, func(tol corev1.Toleration) bool { return tol.ToleratesTaint(klog.Background(), &t, false) })
			var at time.Time
			switch {
			case i < 0 && t.TimeAdded != nil:
				at = t.TimeAdded.Time
			case i < 0:
				at = now
			case tolerations[i].TolerationSeconds == nil || t.TimeAdded == nil:
				continue
			default:
				at = t.TimeAdded.Add(time.Duration(*tolerations[i].TolerationSeconds) * time.Second)
			}
			if entry.LeavesAt == nil || at.Before(entry.LeavesAt.Time) {
				entry.LeavesAt, entry.DefaultToleration = ptr.To(metav1.NewTime(at).Rfc3339Copy()), nil
				if i >= own {
					entry.DefaultToleration = &metav1.Duration{Duration: p.FailoverAfter}
				}
			}
		}
		out = append(out, entry)
	}
	slices.SortFunc(out, func(a, b workv1alpha1.TaintedCluster) int { return strings.Compare(a.Cluster, b.Cluster) })
	return out
}

// NextExpiry returns how long until the binding leaves a cluster it runs on because a toleration of a
// NoExecute taint there runs out (Tainted), so the scheduler can look again then.
func (p TaintToleration) NextExpiry(b *workv1alpha1.ResourceBindingSpec, clusters []clusterv1alpha1.Cluster, now time.Time) (time.Duration, bool) {
	var next time.Duration
	found := false
	for _, c := range p.Tainted(b, clusters, now) {
		if c.LeavesAt == nil {
			continue
		}
		if d := c.LeavesAt.Sub(now); d > 0 && (!found || d < next) {
			next, found = d, true
		}
	}
	return next, found
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
