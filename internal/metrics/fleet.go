package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

var (
	clustersDesc = prometheus.NewDesc("flotilla_clusters",
		"Member clusters by their Ready condition (True, False, or Unknown: heartbeat lost or not reported yet).", []string{"ready"}, nil)
	bindingsDesc = prometheus.NewDesc("flotilla_bindings",
		"Bindings by kind and by the status of each of their conditions Scheduled, FullyApplied and Healthy (Unknown when the condition is missing).",
		[]string{"kind", "condition", "status"}, nil)
	tunnelsDesc = prometheus.NewDesc("flotilla_tunnels",
		"Pull clusters by their TunnelConnected condition: whether the agent's tunnel to the hub, which the proxy reaches the member through, is open (Unknown: not reported yet).",
		[]string{"connected"}, nil)
	fleetErrorDesc = prometheus.NewDesc("flotilla_fleet_metrics_error", "Reading the fleet's state for its metrics failed.", nil, nil)
)

// scrapeTimeout bounds the cache reads of one scrape.
const scrapeTimeout = 5 * time.Second

// bindingConditions are the binding conditions counted, each by its owner: scheduler, binding controller,
// status controller.
var bindingConditions = []string{workv1alpha1.ConditionScheduled, workv1alpha1.ConditionFullyApplied, workv1alpha1.ConditionHealthy}

var conditionStatuses = []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown}

// Fleet is a collector that counts clusters and bindings by condition from a cache at each scrape, so the
// figures are never stale and nothing is kept between scrapes. Every combination is sent, zeros included, so
// that an alert on a count sees 0 rather than no series.
type Fleet struct {
	Reader client.Reader
}

// Describe sends the fleet's metric descriptions.
func (Fleet) Describe(ch chan<- *prometheus.Desc) {
	ch <- clustersDesc
	ch <- tunnelsDesc
	ch <- bindingsDesc
}

// Collect reads the clusters and bindings and sends their counts.
func (f Fleet) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	clusters := &clusterv1alpha1.ClusterList{}
	if err := f.Reader.List(ctx, clusters); err != nil {
		ch <- prometheus.NewInvalidMetric(fleetErrorDesc, err)
		return
	}
	ready := countConditions(len(clusters.Items), func(i int) []metav1.Condition { return clusters.Items[i].Status.Conditions }, clusterv1alpha1.ClusterConditionReady)
	for _, s := range conditionStatuses {
		ch <- prometheus.MustNewConstMetric(clustersDesc, prometheus.GaugeValue, ready[s], string(s))
	}
	var pull []clusterv1alpha1.Cluster
	for _, c := range clusters.Items {
		if c.Spec.SyncMode == clusterv1alpha1.Pull {
			pull = append(pull, c)
		}
	}
	tunnels := countConditions(len(pull), func(i int) []metav1.Condition { return pull[i].Status.Conditions }, clusterv1alpha1.ClusterConditionTunnelConnected)
	for _, s := range conditionStatuses {
		ch <- prometheus.MustNewConstMetric(tunnelsDesc, prometheus.GaugeValue, tunnels[s], string(s))
	}
	rbs, crbs := &workv1alpha1.ResourceBindingList{}, &workv1alpha1.ClusterResourceBindingList{}
	for _, list := range []client.ObjectList{rbs, crbs} {
		if err := f.Reader.List(ctx, list); err != nil {
			ch <- prometheus.NewInvalidMetric(fleetErrorDesc, err)
			return
		}
	}
	for _, c := range bindingConditions {
		rb := countConditions(len(rbs.Items), func(i int) []metav1.Condition { return rbs.Items[i].Status.Conditions }, c)
		crb := countConditions(len(crbs.Items), func(i int) []metav1.Condition { return crbs.Items[i].Status.Conditions }, c)
		for _, s := range conditionStatuses {
			ch <- prometheus.MustNewConstMetric(bindingsDesc, prometheus.GaugeValue, rb[s], "ResourceBinding", c, string(s))
			ch <- prometheus.MustNewConstMetric(bindingsDesc, prometheus.GaugeValue, crb[s], "ClusterResourceBinding", c, string(s))
		}
	}
}

// countConditions counts n objects by the status of their condition t; a missing condition counts as Unknown.
func countConditions(n int, conditions func(int) []metav1.Condition, t string) map[metav1.ConditionStatus]float64 {
	counts := map[metav1.ConditionStatus]float64{}
	for i := range n {
		status := metav1.ConditionUnknown
		if c := meta.FindStatusCondition(conditions(i), t); c != nil {
			status = c.Status
		}
		counts[status]++
	}
	return counts
}
